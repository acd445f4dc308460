import {
  checkCell,
  currentJob,
  describeJob,
  describeKernelState,
  filterKernels,
  formatDate,
  formatSpeedup,
  verdictNote,
  cellFor,
  Job,
  Kernel,
  kernelStateError,
  keptFlags,
  magicCell,
  magicLine,
  parseKernelState,
  preview,
  problemMessage,
  modelProblem,
  readOptions,
  serverErrorMessage,
  splitMagic,
  splitWords,
  unrepr
} from '../logic';

const MODULE = 'import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n';

describe('the %%autotriton cell', () => {
  it('puts a magic line with the options above a plain cell', () => {
    expect(magicCell(MODULE, { n: 2, model: 'tiny', maxTokens: 64 })).toBe(
      `%%autotriton -n 2 --model tiny --max-tokens 64\n${MODULE}`
    );
  });

  it('leaves out the flags that are at their defaults', () => {
    expect(magicLine({ n: 4, model: '', maxTokens: null })).toBe('%%autotriton -n 4');
  });

  it('quotes a model path with spaces', () => {
    expect(magicLine({ n: 1, model: '/models/my model.gguf', maxTokens: null })).toBe(
      "%%autotriton -n 1 --model '/models/my model.gguf'"
    );
  });

  it('replaces the panel-owned flags of an existing magic line and keeps the others', () => {
    const cell = `%%autotriton -n 8 --name Fast --model=old --max-tokens 99 --inputs '[torch.randn(4, 4)]'\n${MODULE}`;
    expect(magicCell(cell, { n: 2, model: 'tiny', maxTokens: null })).toBe(
      `%%autotriton -n 2 --model tiny --name Fast --inputs '[torch.randn(4, 4)]'\n${MODULE}`
    );
  });

  it('drops the short -n form written without a space', () => {
    expect(keptFlags('%%autotriton -n3 --rounds 1')).toEqual(['--rounds', '1']);
  });

  it('does not take a line that only starts like the magic for it', () => {
    expect(splitMagic('%%autotritonx\nx = 1').line).toBeNull();
    expect(splitMagic('%%autotriton\nx = 1')).toEqual({ line: '%%autotriton', body: 'x = 1' });
  });

  it('splits words like a shell, keeping the quotes', () => {
    expect(splitWords(`a "b c" 'd e'f  g`)).toEqual(['a', '"b c"', "'d e'f", 'g']);
  });
});

describe('what stops a run', () => {
  const ok = {
    notebook: true,
    cellType: 'code',
    source: MODULE,
    kernelLanguage: 'python',
    kernelName: 'Python 3'
  };

  it('lets a Python code cell with code through', () => {
    expect(checkCell(ok)).toBeNull();
  });

  it.each([
    [{ notebook: false }, 'no-notebook'],
    [{ cellType: null }, 'no-cell'],
    [{ cellType: 'markdown' }, 'not-code'],
    [{ source: '  \n' }, 'empty'],
    [{ source: '%%autotriton -n 2\n\n' }, 'empty'],
    [{ kernelLanguage: null }, 'no-kernel'],
    [{ kernelLanguage: 'R', kernelName: 'R 4.3' }, 'not-python']
  ])('case %# (%j) gives %s', (change, problem) => {
    expect(checkCell({ ...ok, ...change })).toBe(problem);
  });

  it('names the cell type and the kernel in its messages', () => {
    expect(problemMessage('not-code', { cellType: 'markdown' })).toMatch(/markdown cell/);
    expect(problemMessage('not-python', { kernelLanguage: 'R', kernelName: 'R 4.3' })).toMatch(
      /\(R 4\.3\) runs R, not Python/
    );
    expect(problemMessage('no-kernel')).toMatch(/no running kernel/);
  });

  it('reads the option fields', () => {
    expect(readOptions('3', ' tiny ', '', 8192)).toEqual({ n: 3, model: 'tiny', maxTokens: null });
    expect(readOptions('3', '', '64', 8192)).toEqual({ n: 3, model: '', maxTokens: 64 });
    expect(readOptions('3', '', '8192', 8192)?.maxTokens).toBeNull();
    expect(readOptions('0', '', '', 8192)).toBeNull();
    expect(readOptions('2.5', '', '', 8192)).toBeNull();
    expect(readOptions('2', '', '8', 8192)).toBeNull();
  });
});

describe('the preview', () => {
  it('shows the first lines and counts the rest', () => {
    const text = Array.from({ length: 11 }, (_, i) => `line ${i}`).join('\n');
    expect(preview(text, 3)).toBe('line 0\nline 1\nline 2\n… 8 more lines');
    expect(preview('a\nb\n\n', 3)).toBe('a\nb');
  });
});

const kernel = (over: Partial<Kernel>): Kernel => ({
  name: 'FastSoftmax',
  task: 'softmax',
  edited: false,
  created: 0,
  created_iso: '',
  verdict: 'pass',
  speedup_vs_eager: 1.83,
  speedup_vs_compile: 1.21,
  model: 'tiny',
  adapter: null,
  ...over
});

describe('the kernel library', () => {
  it('formats speedups against eager and compile', () => {
    expect(formatSpeedup(1.83, 1.21)).toBe('1.8x eager · 1.2x compile one call');
    expect(formatSpeedup(2, null)).toBe('2.0x eager one call');
    expect(formatSpeedup(null, null)).toBe('not timed');
    // Device time (back to back) wins where the library has it: it is what ranked the kernel.
    expect(formatSpeedup(0.5, 0.8, 1.4, 1.1)).toBe('1.4x eager · 1.1x compile back to back');
    expect(formatSpeedup(0.5, 0.8, null, null)).toBe('0.5x eager · 0.8x compile one call');
  });

  it('inserts below the cell that holds the result view, else below the active one', () => {
    const outputs = [[], ['a1'], ['b2', 'c3'], []];
    expect(cellFor(outputs, 'c3', 0)).toBe(2);
    expect(cellFor(outputs, 'a1', 3)).toBe(1);
    expect(cellFor(outputs, 'gone', 3)).toBe(3);
    expect(cellFor(outputs, '', 1)).toBe(1);
  });

  it('marks a conditional kernel in the library, and nothing for a pass', () => {
    expect(verdictNote('pass')).toBeNull();
    expect(verdictNote(null)).toBeNull();
    expect(verdictNote('conditional')?.text).toBe('conditional');
    expect(verdictNote('conditional')?.title).toContain("task's own inputs");
    expect(verdictNote('inconclusive')?.text).toBe('inconclusive');
  });

  it('filters on every word of the query in name, task and model', () => {
    const list = [kernel({}), kernel({ name: 'AddRelu', task: 'add_relu', model: 'autotriton' })];
    expect(filterKernels(list, '').map(k => k.name)).toEqual(['FastSoftmax', 'AddRelu']);
    expect(filterKernels(list, 'relu').map(k => k.name)).toEqual(['AddRelu']);
    expect(filterKernels(list, 'SOFT tiny').map(k => k.name)).toEqual(['FastSoftmax']);
    expect(filterKernels(list, 'softmax autotriton')).toEqual([]);
  });

  it('writes dates as year-month-day hours:minutes', () => {
    expect(formatDate(1_700_000_000)).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d$/);
  });
});

const job = (over: Partial<Job>): Job => ({
  id: '1',
  task: 'softmax',
  notebook: 'a.ipynb',
  pid: 1,
  state: 'done',
  stage: '',
  lines: [],
  started: 0,
  updated: 0,
  ...over
});

describe('jobs', () => {
  it('shows a running job before a newer finished one', () => {
    const jobs = [
      job({ id: 'a', state: 'running', updated: 5 }),
      job({ id: 'b', state: 'done', updated: 9 })
    ];
    expect(currentJob(jobs)?.id).toBe('a');
    expect(currentJob([job({ id: 'x', updated: 1 }), job({ id: 'y', updated: 2 })])?.id).toBe('y');
    expect(currentJob([])).toBeNull();
  });

  it("shows only this notebook's runs", () => {
    const jobs = [
      job({ id: 'mine', notebook: '/home/me/work/a.ipynb', updated: 1 }),
      job({ id: 'other', notebook: '/home/me/work/b.ipynb', state: 'running', updated: 9 })
    ];
    expect(currentJob(jobs, 'work/a.ipynb')?.id).toBe('mine');
    expect(currentJob(jobs, 'c.ipynb')).toBeNull();
    expect(currentJob(jobs, null)).toBeNull();
    expect(currentJob(jobs)?.id).toBe('other');
    // A notebook renamed since its kernel started: its kernel still names it.
    const renamed = [job({ id: 'k', notebook: '/x/Untitled.ipynb', kernel: 'abc' })];
    expect(currentJob(renamed, 'panel.ipynb', 'abc')?.id).toBe('k');
    expect(currentJob(renamed, 'panel.ipynb', 'zzz')).toBeNull();
  });

  it('describes a job in one line', () => {
    expect(describeJob(job({ state: 'running', stage: 'verifying' }))).toBe(
      'softmax in a.ipynb: running, verifying'
    );
    expect(describeJob(job({ notebook: '/home/me/work/b.ipynb', stage: '' }))).toBe(
      'softmax in b.ipynb: done'
    );
  });
});

describe("the kernel's state", () => {
  const json = '{"extension_loaded": true, "model": "tiny", "adapter": null, "loaded": ["tiny"], "busy": false}';

  it("reads the repr of the JSON string that kernel_state() returns", () => {
    const state = parseKernelState(`'${json}'`);
    expect(state).toEqual({
      extension_loaded: true,
      model: 'tiny',
      adapter: null,
      loaded: ['tiny'],
      busy: false
    });
    expect(describeKernelState(state!)).toBe('loaded in the kernel: tiny');
  });

  it('undoes the escapes of a Python repr', () => {
    expect(unrepr(String.raw`'C:\\models \'x\' \x41\u00e9\n'`)).toBe("C:\\models 'x' Aé\n");
    expect(unrepr('"it\'s"')).toBe("it's");
  });

  it('rejects what is not a state', () => {
    expect(parseKernelState("'hello'")).toBeNull();
    expect(parseKernelState('None')).toBeNull();
  });

  it('says when the package is missing from the kernel', () => {
    expect(kernelStateError('ModuleNotFoundError', "No module named 'autotriton_jupyter'")).toMatch(
      /cannot be imported in this notebook's kernel/
    );
  });
});

describe('server errors', () => {
  it("shows the server's message", () => {
    expect(serverErrorMessage(404, { message: "No accepted kernel named 'x'" })).toBe(
      "No accepted kernel named 'x'"
    );
  });

  it('says the server extension is missing on a 404 without a message', () => {
    expect(serverErrorMessage(404, null)).toMatch(/server extension is not running/);
  });

  it('gives the status for other errors', () => {
    expect(serverErrorMessage(500, null)).toMatch(/HTTP 500/);
  });
});

describe('modelProblem', () => {
  const autotriton = { name: 'autotriton', available: false, needs: '`autotriton model pull`' };
  const models = [
    autotriton,
    { name: 'tiny', available: true, needs: '' },
    { name: 'openai:<name>', available: true, needs: '' },
    { name: 'tiny-hf', available: false, needs: "pip install 'autotriton-jupyter[hf]'" }
  ];

  it('says why the default model cannot run, and which installed ones can', () => {
    const text = modelProblem('', autotriton, models)!;
    expect(text).toMatch(/default model autotriton cannot run here/);
    expect(text).toMatch(/autotriton model pull/);
    expect(text).toMatch(/\(tiny\)/);
  });

  it('says why a chosen model cannot run', () => {
    expect(modelProblem('tiny-hf', autotriton, models)).toMatch(/The model tiny-hf .*autotriton-jupyter\[hf\]/);
  });

  it('lets a usable or unknown model run', () => {
    expect(modelProblem('tiny', autotriton, models)).toBeNull();
    expect(modelProblem('/models/x.gguf', autotriton, models)).toBeNull();
    expect(modelProblem('', { ...autotriton, available: true }, models)).toBeNull();
    expect(modelProblem('', null, models)).toBeNull();
  });
});
