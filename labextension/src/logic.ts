/**
 * What the panel decides, without JupyterLab: the %%autotriton cell text, the message for
 * each state that stops "Tritonize this", and how kernels, jobs and speedups read.
 * Everything here is plain data in, plain data out, so it is unit-tested with Jest.
 */

export const MAGIC = '%%autotriton';

/** The options the panel sets on the magic line. */
export interface TritonizeOptions {
  n: number;
  /** Empty: the model the settings name (no --model flag). */
  model: string;
  /** null: the settings' max tokens (no --max-tokens flag). */
  maxTokens: number | null;
}

/** The words of a magic line, split like a shell (quotes kept, as IPython keeps them). */
export function splitWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let quote = '';
  let inWord = false;
  for (const ch of line) {
    if (quote) {
      word += ch;
      if (ch === quote) {
        quote = '';
      }
    } else if (ch === "'" || ch === '"') {
      word += ch;
      quote = ch;
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) {
        words.push(word);
        word = '';
        inWord = false;
      }
    } else {
      word += ch;
      inWord = true;
    }
  }
  if (inWord) {
    words.push(word);
  }
  return words;
}

/** A value goes on the magic line quoted when it has spaces or quotes in it. */
function quoted(value: string): string {
  if (!/[\s'"]/.test(value)) {
    return value;
  }
  return value.includes("'") ? `"${value}"` : `'${value}'`;
}

/** Flags the panel owns: these are replaced; every other flag on an existing line is kept. */
const OWNED = ['-n', '--model', '--max-tokens'];

/** The flags of a %%autotriton line without the ones the panel sets. */
export function keptFlags(line: string): string[] {
  const words = splitWords(line).slice(1);
  const kept: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i];
    const owner = OWNED.find(
      f => w === f || w.startsWith(`${f}=`) || (f === '-n' && /^-n\d+$/.test(w))
    );
    if (owner === undefined) {
      kept.push(w);
    } else if (w === owner) {
      i++; // the flag's value is the next word
    }
  }
  return kept;
}

/** The magic line for these options, keeping the extra flags of an existing line. */
export function magicLine(options: TritonizeOptions, existing?: string): string {
  const parts = [MAGIC, '-n', String(options.n)];
  if (options.model) {
    parts.push('--model', quoted(options.model));
  }
  if (options.maxTokens !== null) {
    parts.push('--max-tokens', String(options.maxTokens));
  }
  if (existing) {
    parts.push(...keptFlags(existing));
  }
  return parts.join(' ');
}

/** A cell split into its %%autotriton line (null when it has none) and the rest. */
export function splitMagic(source: string): { line: string | null; body: string } {
  const first = source.split('\n', 1)[0];
  if (first.trim() === MAGIC || first.trimStart().startsWith(MAGIC + ' ')) {
    const rest = source.slice(first.length);
    return { line: first.trim(), body: rest.startsWith('\n') ? rest.slice(1) : rest };
  }
  return { line: null, body: source };
}

/** The text of the new cell: the magic line, then the cell's code. */
export function magicCell(source: string, options: TritonizeOptions): string {
  const { line, body } = splitMagic(source);
  return `${magicLine(options, line ?? undefined)}\n${body}`;
}

/** The first lines of a cell, for the panel's preview. */
export function preview(source: string, lines = 8): string {
  const all = source.replace(/\s+$/, '').split('\n');
  if (all.length <= lines) {
    return all.join('\n');
  }
  const more = all.length - lines;
  return `${all.slice(0, lines).join('\n')}\n… ${more} more line${more === 1 ? '' : 's'}`;
}

/** Why "Tritonize this" cannot run now. */
export type Problem =
  | 'no-notebook'
  | 'no-cell'
  | 'not-code'
  | 'empty'
  | 'no-kernel'
  | 'not-python'
  | 'options';

/** What the panel knows about the active notebook when the user asks for a run. */
export interface CellState {
  notebook: boolean;
  cellType: string | null;
  source: string;
  /** null: no kernel is running for the notebook. */
  kernelLanguage: string | null;
  kernelName?: string;
}

/** The first thing that stops a run, or null when it can go ahead. */
export function checkCell(state: CellState): Problem | null {
  if (!state.notebook) {
    return 'no-notebook';
  }
  if (state.cellType === null) {
    return 'no-cell';
  }
  if (state.cellType !== 'code') {
    return 'not-code';
  }
  if (splitMagic(state.source).body.trim() === '') {
    return 'empty';
  }
  if (state.kernelLanguage === null) {
    return 'no-kernel';
  }
  if (state.kernelLanguage.toLowerCase() !== 'python') {
    return 'not-python';
  }
  return null;
}

/** What the user reads for each problem: what happened and what to do. */
export function problemMessage(problem: Problem, state?: Partial<CellState>): string {
  switch (problem) {
    case 'no-notebook':
      return 'No notebook is open. Open a notebook, select the cell with your PyTorch module, then press "Tritonize this".';
    case 'no-cell':
      return 'The notebook has no active cell. Click the cell with your PyTorch module, then try again.';
    case 'not-code':
      return `The active cell is a ${state?.cellType ?? 'non-code'} cell. Select a code cell that holds a PyTorch module (class Model with get_inputs()).`;
    case 'empty':
      return 'The active cell is empty. Write a PyTorch module in it (class Model, get_inputs(), get_init_inputs()), then try again.';
    case 'no-kernel':
      return 'The notebook has no running kernel. Start a Python kernel (Kernel → Change Kernel), then try again.';
    case 'not-python':
      return `The notebook's kernel${state?.kernelName ? ` (${state.kernelName})` : ''} runs ${state?.kernelLanguage ?? 'another language'}, not Python. Switch to a Python kernel that has autotriton-jupyter installed.`;
    case 'options':
      return 'Samples must be a whole number from 1 to 64, and max tokens a whole number from 16 up (or empty for the default).';
  }
}

/** What the panel knows of a model: its name, and whether it can run here (else what it needs). */
export interface ModelState {
  name: string;
  available: boolean;
  needs: string;
}

/**
 * Why the chosen model cannot run, or null when it can (or nothing is known of it).
 * `chosen` is the select's value: empty means the default of the settings.
 */
export function modelProblem(
  chosen: string,
  defaultModel: ModelState | null,
  models: ModelState[]
): string | null {
  const model = chosen === '' ? defaultModel : models.find(m => m.name === chosen) ?? null;
  if (!model || model.available) {
    return null;
  }
  const others = models.filter(m => m.available && m.name !== model.name && !m.name.includes('<'));
  const pick = others.length
    ? ` Pick one that is installed in Model above (${others.map(m => m.name).join(', ')}),`
    : ' Install one,';
  const what = chosen === '' ? `The default model ${model.name}` : `The model ${model.name}`;
  return `${what} cannot run here: it needs ${model.needs}.${pick} or set \`model\` in autotriton's settings.`;
}

/** The panel's option fields, read from their text; null when a value is not acceptable. */
export function readOptions(
  n: string,
  model: string,
  maxTokens: string,
  defaultMaxTokens: number | null
): TritonizeOptions | null {
  const count = Number(n.trim());
  if (!Number.isInteger(count) || count < 1 || count > 64) {
    return null;
  }
  let tokens: number | null = null;
  if (maxTokens.trim() !== '') {
    tokens = Number(maxTokens.trim());
    if (!Number.isInteger(tokens) || tokens < 16) {
      return null;
    }
    if (tokens === defaultMaxTokens) {
      tokens = null; // the default needs no flag
    }
  }
  return { n: count, model: model.trim(), maxTokens: tokens };
}

/** A kernel in the library, as the server lists it. */
export interface Kernel {
  name: string;
  task: string;
  edited: boolean;
  created: number;
  created_iso: string;
  verdict: string | null;
  speedup_vs_eager: number | null;
  speedup_vs_compile: number | null;
  speedup_vs_eager_b2b?: number | null;
  speedup_vs_compile_b2b?: number | null;
  model: string | null;
  adapter: string | null;
}

function times(v: number | null): string | null {
  return v === null || v === undefined || !Number.isFinite(v) || v <= 0
    ? null
    : `${v.toFixed(1)}x`;
}

/**
 * "1.8x eager · 1.2x compile back to back" (device time, what ranks kernels) where the
 * library has those figures, else "... one call", or why there is no figure.
 */
export function formatSpeedup(
  eager: number | null,
  compile: number | null,
  eagerB2b: number | null = null,
  compileB2b: number | null = null
): string {
  const device = times(eagerB2b) !== null || times(compileB2b) !== null;
  const e = times(device ? eagerB2b : eager);
  const c = times(device ? compileB2b : compile);
  if (e === null && c === null) {
    return 'not timed';
  }
  const figure = device ? 'back to back' : 'one call';
  return [e && `${e} eager`, c && `${c} compile`].filter(Boolean).join(' · ') + ` ${figure}`;
}

/**
 * A word on a library kernel's verdict when it is not a plain pass, with what it means:
 * a `conditional` kernel was right on the task's own inputs only, and accepted anyway.
 */
export function verdictNote(verdict: string | null): { text: string; title: string } | null {
  if (verdict === 'conditional') {
    return {
      text: 'conditional',
      title:
        "Right on the task's own inputs, wrong on inputs the verifier made " +
        '(sign-flipped, scaled, extreme or other shapes); accepted after a confirmation.'
    };
  }
  if (verdict && verdict !== 'pass') {
    return { text: verdict, title: `Accepted with the verdict '${verdict}'.` };
  }
  return null;
}

/** A library date as "2026-12-02 18:14" in the user's time zone. */
export function formatDate(seconds: number): string {
  const d = new Date(seconds * 1000);
  const p = (x: number) => String(x).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** Kernels whose name, task or model contain every word of the query (any case). */
export function filterKernels(kernels: Kernel[], query: string): Kernel[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  return kernels.filter(k => {
    const text = [k.name, k.task, k.model ?? '', k.adapter ?? ''].join(' ').toLowerCase();
    return words.every(w => text.includes(w));
  });
}

/** A job of the server's job list. */
export interface Job {
  id: string;
  task: string;
  notebook: string | null;
  kernel?: string | null;
  pid: number | null;
  state: 'running' | 'done' | 'failed' | 'cancelled' | 'stopped';
  stage: string;
  lines: string[];
  started: number;
  updated: number;
}

/** Whether a job's notebook path is this notebook (one path may be absolute). */
export function sameNotebook(jobPath: string | null, path: string | null): boolean {
  if (!jobPath || !path) {
    return false;
  }
  return jobPath === path || jobPath.endsWith('/' + path) || path.endsWith('/' + jobPath);
}

/**
 * The job the Progress section shows: this notebook's only (another notebook's run is
 * not this one's progress); a running one first, else the latest. With no notebook
 * given, any job.
 */
export function currentJob(
  jobs: Job[],
  notebook?: string | null,
  kernel?: string | null
): Job | null {
  const mine =
    notebook === undefined
      ? jobs
      : jobs.filter(
          j => (kernel && j.kernel === kernel) || sameNotebook(j.notebook, notebook ?? null)
        );
  if (mine.length === 0) {
    return null;
  }
  const running = mine.filter(j => j.state === 'running');
  const pool = running.length > 0 ? running : mine;
  return pool.reduce((a, b) => (b.updated > a.updated ? b : a));
}

/** One line about a job: "softmax: running, verifying (2/4)". */
export function describeJob(job: Job): string {
  const where = job.notebook ? ` in ${job.notebook.split('/').pop()}` : '';
  return `${job.task}${where}: ${job.state}${job.stage ? `, ${job.stage}` : ''}`;
}

/** The kernel-side state reported by autotriton_jupyter.magic.kernel_state(). */
export interface KernelState {
  extension_loaded: boolean;
  model: string | null;
  adapter: string | null;
  loaded: string[];
  busy: boolean;
}

/** Undo Python's repr() of a str (the text/plain form of a user expression's value). */
export function unrepr(text: string): string {
  let s = text.trim();
  const q = s[0];
  if ((q !== "'" && q !== '"') || s[s.length - 1] !== q) {
    return s;
  }
  s = s.slice(1, -1);
  const simple: Record<string, string> = {
    '\\': '\\',
    "'": "'",
    '"': '"',
    n: '\n',
    r: '\r',
    t: '\t',
    '0': '\0'
  };
  return s.replace(/\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)/g, (m, e: string) => {
    if (e.length > 1) {
      return String.fromCodePoint(parseInt(e.slice(1), 16));
    }
    return simple[e] ?? m;
  });
}

/** The kernel state out of a user expression's text/plain, or null when it is not one. */
export function parseKernelState(textPlain: string): KernelState | null {
  try {
    const value = JSON.parse(unrepr(textPlain));
    if (value && typeof value === 'object' && 'extension_loaded' in value) {
      return {
        extension_loaded: Boolean(value.extension_loaded),
        model: value.model ?? null,
        adapter: value.adapter ?? null,
        loaded: Array.isArray(value.loaded) ? value.loaded.map(String) : [],
        busy: Boolean(value.busy)
      };
    }
  } catch {
    // not JSON: reported as null below
  }
  return null;
}

/** One line for the Model section about what the kernel holds. */
export function describeKernelState(state: KernelState): string {
  if (!state.extension_loaded) {
    return 'autotriton is installed in this kernel but not loaded yet (it loads on the first run).';
  }
  const loaded = state.loaded.length
    ? `loaded in the kernel: ${state.loaded.join(', ')}`
    : 'no model loaded in the kernel yet (the first run loads it)';
  return state.busy ? `${loaded}; a run is in progress` : loaded;
}

/** What a failed user expression means for the Model section. */
export function kernelStateError(ename: string, evalue: string): string {
  if (ename === 'ModuleNotFoundError' || ename === 'ImportError') {
    return "autotriton_jupyter cannot be imported in this notebook's kernel. Install autotriton-jupyter in the kernel's environment, or pick the kernel of the environment that has it.";
  }
  return `The kernel could not report autotriton's state (${ename}: ${evalue}).`;
}

/** The message for a failed request to the server extension. */
export function serverErrorMessage(status: number, body: unknown): string {
  const message =
    body && typeof body === 'object' && typeof (body as any).message === 'string'
      ? ((body as any).message as string)
      : null;
  if (message) {
    return message;
  }
  if (status === 404) {
    return 'The autotriton server extension is not running in this Jupyter server. Install autotriton-jupyter where JupyterLab runs, then restart JupyterLab (`jupyter server extension list` should list autotriton_jupyter).';
  }
  if (status === 0) {
    return 'The Jupyter server cannot be reached. Check that it is still running.';
  }
  return `The autotriton server extension answered with an error (HTTP ${status}). Its log in the terminal that runs JupyterLab says more.`;
}

/**
 * The index of the cell below which "Insert as cell" puts the code: the cell whose
 * outputs hold the result view (widget model `viewId`), else the active cell.
 */
export function cellFor(outputs: string[][], viewId: string, active: number): number {
  const found = viewId ? outputs.findIndex(ids => ids.includes(viewId)) : -1;
  return found >= 0 ? found : active;
}
