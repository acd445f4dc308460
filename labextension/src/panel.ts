/**
 * The right-sidebar panel: the active cell and the run options, the Progress of jobs,
 * the Kernel library and the Model. Plain DOM in a Lumino widget; what it decides is
 * in logic.ts, what it asks the server is in api.ts.
 */
import { ISessionContextDialogs, Notification } from '@jupyterlab/apputils';
import { Cell } from '@jupyterlab/cells';
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel as KernelClient } from '@jupyterlab/services';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { api, ApiError, Settings } from './api';
import {
  checkCell,
  currentJob,
  describeJob,
  describeKernelState,
  filterKernels,
  formatDate,
  formatSpeedup,
  verdictNote,
  Kernel,
  kernelStateError,
  magicCell,
  parseKernelState,
  preview,
  problemMessage,
  modelProblem,
  readOptions
} from './logic';

const STATE_EXPRESSION =
  "__import__('autotriton_jupyter.magic', fromlist=['x']).kernel_state()";
const POLL_MS = 1000;
const LIBRARY_EVERY = 5; // polls between library refreshes while the panel is open

type Attrs = Record<string, string>;

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    node.setAttribute(k, v);
  }
  node.append(...children);
  return node;
}

function errorText(e: unknown): string {
  return e instanceof ApiError || e instanceof Error ? e.message : String(e);
}

export class TritonPanel extends Widget {
  constructor(
    private tracker: INotebookTracker,
    private dialogs: ISessionContextDialogs | null
  ) {
    super();
    this.addClass('jp-AutoTriton');
    this.node.append(
      this.section('Active cell', this.notebookName, this.preview),
      this.section(
        'Options',
        this.field('Samples', this.samples),
        this.field('Model', this.model),
        this.field('Max tokens', this.maxTokens),
        this.button,
        this.message
      ),
      this.section('Progress', this.jobTitle, this.jobLines),
      this.section('Kernel library', this.search, this.libraryNote, this.library),
      this.section('Model', this.settingsLine, this.kernelLine, this.refresh)
    );
    this.samples.value = '4';
    this.samples.type = 'number';
    this.samples.min = '1';
    this.samples.max = '64';
    this.maxTokens.type = 'number';
    this.maxTokens.min = '16';
    this.model.append(el('option', { value: '' }, 'default'));
    this.search.type = 'search';
    this.search.placeholder = 'Search kernels';
    this.button.addEventListener('click', () => void this.tritonize());
    this.refresh.addEventListener('click', () => {
      void this.loadSettings();
      void this.refreshKernelState();
    });
    this.search.addEventListener('input', () => this.onSearch());
    this.samples.addEventListener('input', () => (this.samplesTouched = true));

    tracker.currentChanged.connect(this.onNotebook, this);
    tracker.activeCellChanged.connect(this.onActiveCell, this);
    NotebookActions.executed.connect((_, args) => {
      if (args.notebook === this.tracker.currentWidget?.content) {
        void this.refreshKernelState();
      }
    }, this);
    this.onNotebook();
    void this.loadSettings();
    void this.loadKernels();
    void this.poll();
  }

  /** "Tritonize this": the active cell, as a %%autotriton cell below it, run in the kernel. */
  async tritonize(): Promise<void> {
    if (this.starting) {
      return;
    }
    this.starting = true;
    this.button.disabled = true;
    try {
      await this.start();
    } catch (e) {
      this.problem(`Tritonize this failed: ${errorText(e)}`);
    } finally {
      this.starting = false;
      this.button.disabled = false;
    }
  }

  private async start(): Promise<void> {
    const nb = this.tracker.currentWidget;
    const cell = nb?.content.activeCell ?? null;
    const source = cell?.model.sharedModel.getSource() ?? '';
    let kernelLanguage: string | null = null;
    let kernelName = '';
    if (nb && !nb.isDisposed) {
      await nb.sessionContext.ready;
      const kernel = nb.sessionContext.session?.kernel;
      if (kernel) {
        const spec = await kernel.spec;
        // Without a spec the language is unknown; let the kernel itself answer below.
        kernelLanguage = spec?.language ?? 'python';
        kernelName = spec?.display_name ?? kernel.name;
      }
    }
    const state = {
      notebook: !!nb && !nb.isDisposed,
      cellType: cell ? cell.model.type : null,
      source,
      kernelLanguage,
      kernelName
    };
    const problem = checkCell(state);
    if (problem) {
      const offerKernel = problem === 'no-kernel' && nb && this.dialogs;
      this.problem(
        problemMessage(problem, state),
        offerKernel
          ? [
              {
                label: 'Select a kernel',
                callback: () => void this.dialogs!.selectKernel(nb.sessionContext)
              }
            ]
          : []
      );
      return;
    }
    const options = readOptions(
      this.samples.value,
      this.model.value,
      this.maxTokens.value,
      this.settings?.max_tokens ?? null
    );
    if (!options) {
      this.problem(problemMessage('options'));
      return;
    }
    const unusable = this.settings
      ? modelProblem(options.model, this.settings.model, this.settings.models)
      : null;
    if (unusable) {
      this.problem(unusable);
      return;
    }
    const notebook = nb!.content;
    const index = notebook.widgets.indexOf(cell!);
    notebook.model!.sharedModel.insertCell(index + 1, {
      cell_type: 'code',
      source: magicCell(source, options)
    });
    notebook.activeCellIndex = index + 1;
    notebook.deselectAll();

    this.say('Loading autotriton in the kernel…');
    const kernel = nb!.sessionContext.session!.kernel!;
    const reply = await kernel.requestExecute({
      code: '%load_ext autotriton_jupyter',
      silent: true,
      store_history: false
    }).done;
    if (reply.content.status !== 'ok') {
      const c = reply.content as any;
      this.problem(kernelStateError(c.ename ?? 'Error', c.evalue ?? ''));
      return;
    }
    this.say('Running the %%autotriton cell inserted below; its output shows the progress and the result.');
    this.jobExpected = true;
    // Not awaited: the run takes minutes, and the panel stays usable meanwhile.
    void NotebookActions.run(notebook, nb!.sessionContext).then(ok => {
      this.jobExpected = false;
      if (!this.isDisposed) {
        this.say(ok ? 'The %%autotriton cell finished; its result is in the notebook.' : 'The %%autotriton cell stopped with an error; see its output.');
        void this.loadKernels();
      }
    });
  }

  /** Insert a library kernel's snippet as a code cell below the active cell. */
  async insertKernel(name: string): Promise<void> {
    const nb = this.tracker.currentWidget;
    if (!nb || nb.isDisposed) {
      this.problem(problemMessage('no-notebook'));
      return;
    }
    try {
      const detail = await api.kernel(name);
      const notebook = nb.content;
      const index = Math.max(notebook.activeCellIndex, -1) + 1;
      notebook.model!.sharedModel.insertCell(index, { cell_type: 'code', source: detail.snippet });
      notebook.activeCellIndex = index;
      this.say(`Inserted ${name} below the active cell; run it to load the kernel.`);
    } catch (e) {
      this.problem(errorText(e));
    }
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this.loadKernels();
    void this.refreshKernelState();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.watchCell(null);
    this.watchSession(null);
    super.dispose();
  }

  // the active notebook and cell ---------------------------------------------------------

  private onNotebook(): void {
    const nb = this.tracker.currentWidget;
    this.watchSession(nb);
    this.onActiveCell();
    void this.refreshKernelState();
    void this.loadJobs(); // this notebook's runs, not the last one's
  }

  private onActiveCell(): void {
    const nb = this.tracker.currentWidget;
    this.clearProblem(); // a message about another cell no longer applies
    this.watchCell(nb && !nb.isDisposed ? nb.content.activeCell : null);
    this.showCell();
  }

  private watchCell(cell: Cell | null): void {
    if (this.cell && !this.cell.isDisposed) {
      this.cell.model.contentChanged.disconnect(this.showCell, this);
    }
    this.cell = cell;
    cell?.model.contentChanged.connect(this.showCell, this);
  }

  private watchSession(nb: NotebookPanel | null): void {
    if (this.session && !this.session.isDisposed) {
      this.session.sessionContext.statusChanged.disconnect(this.onKernelStatus, this);
    }
    this.session = nb;
    nb?.sessionContext.statusChanged.connect(this.onKernelStatus, this);
  }

  private onKernelStatus(_: unknown, status: KernelClient.Status): void {
    if (status === 'idle' && this.stateWanted) {
      void this.refreshKernelState();
    }
  }

  private showCell(): void {
    const nb = this.tracker.currentWidget;
    const cell = this.cell;
    if (!nb || nb.isDisposed) {
      this.notebookName.textContent = 'No notebook open.';
      this.preview.textContent = '';
      return;
    }
    this.notebookName.textContent = nb.context.path;
    if (!cell || cell.isDisposed) {
      this.preview.textContent = '(no active cell)';
      return;
    }
    const text = cell.model.sharedModel.getSource();
    const kind = cell.model.type === 'code' ? '' : `(${cell.model.type} cell)\n`;
    this.preview.textContent = kind + (preview(text) || '(empty cell)');
  }

  // server data ------------------------------------------------------------------------

  private async loadSettings(): Promise<void> {
    try {
      const s = await api.settings();
      this.settings = s;
      if (!this.samplesTouched) {
        this.samples.value = String(s.n);
      }
      this.maxTokens.placeholder = `${s.max_tokens} (default)`;
      const chosen = this.model.value;
      const fallback = el('option', { value: '' }, `default: ${s.model.name}`);
      if (!s.model.available) {
        fallback.textContent += ' — not usable here';
        fallback.title = `needs ${s.model.needs}`;
      }
      this.model.replaceChildren(fallback);
      for (const m of s.models) {
        const option = el('option', { value: m.name }, `${m.name} (${m.backend})`);
        if (!m.available) {
          option.disabled = true;
          option.title = `needs ${m.needs}`;
          option.textContent += ` — needs ${m.needs}`;
        }
        this.model.append(option);
      }
      this.model.value = chosen;
      const adapter = s.model.adapter ? ` + adapter ${s.model.adapter}` : '';
      this.settingsLine.textContent = `Settings: ${s.model.name}${adapter}; ${s.n} samples, ${s.rounds} repair rounds; library ${s.library}`;
    } catch (e) {
      this.settingsLine.textContent = errorText(e);
    }
  }

  private async loadKernels(): Promise<void> {
    const query = this.search.value;
    try {
      const { kernels, library } = await api.kernels(query);
      if (query === '') {
        this.allKernels = kernels;
      }
      if (query === this.search.value) {
        this.showKernels(kernels, library);
      }
    } catch (e) {
      this.library.replaceChildren();
      this.libraryNote.textContent = errorText(e);
    }
  }

  private onSearch(): void {
    // Filter what is already here at once; the server's answer replaces it shortly.
    this.showKernels(filterKernels(this.allKernels, this.search.value), null);
    window.clearTimeout(this.searchTimer);
    this.searchTimer = window.setTimeout(() => void this.loadKernels(), 250);
  }

  private showKernels(kernels: Kernel[], library: string | null): void {
    if (library !== null) {
      this.libraryPath = library;
    }
    this.libraryNote.textContent = kernels.length
      ? ''
      : this.search.value
        ? 'No kernel matches the search.'
        : `No accepted kernels yet in ${this.libraryPath}. Accept one in a result view.`;
    this.library.replaceChildren(
      ...kernels.map(k => {
        const insert = el('button', { class: 'jp-AutoTriton-insert jp-mod-styled' }, 'Insert');
        insert.title = `Insert a cell that loads ${k.name} below the active cell`;
        insert.addEventListener('click', () => void this.insertKernel(k.name));
        const note = verdictNote(k.verdict);
        const badge = note
          ? [' · ', el('span', { class: 'jp-AutoTriton-kernelVerdict', title: note.title }, note.text)]
          : [];
        const about = el(
          'div',
          {},
          el('span', { class: 'jp-AutoTriton-kernelName' }, k.name),
          ' ',
          el('span', { class: 'jp-AutoTriton-kernelTask' }, k.task),
          el('br'),
          el(
            'span',
            { class: 'jp-AutoTriton-kernelSpeed' },
            formatSpeedup(
              k.speedup_vs_eager,
              k.speedup_vs_compile,
              k.speedup_vs_eager_b2b ?? null,
              k.speedup_vs_compile_b2b ?? null
            )
          ),
          ' · ',
          el('span', { class: 'jp-AutoTriton-kernelDate' }, formatDate(k.created)),
          ...badge
        );
        return el('li', { class: 'jp-AutoTriton-kernel', 'data-name': k.name }, about, insert);
      })
    );
  }

  /** Jobs every second while the panel shows or a job runs; the library now and then. */
  private async poll(): Promise<void> {
    let tick = 0;
    while (!this.isDisposed) {
      if (this.isVisible || this.jobRunning || this.jobExpected) {
        await this.loadJobs();
        if (this.isVisible && ++tick % LIBRARY_EVERY === 0) {
          await this.loadKernels();
        }
      }
      await new Promise(resolve => setTimeout(resolve, POLL_MS));
    }
  }

  private async loadJobs(): Promise<void> {
    try {
      const { jobs } = await api.jobs();
      const nb = this.tracker.currentWidget;
      const open = nb && !nb.isDisposed ? nb : null;
      const job = currentJob(
        jobs,
        open ? open.context.path : null,
        open?.sessionContext.session?.kernel?.id ?? null
      );
      const wasRunning = this.jobRunning;
      this.jobRunning = job?.state === 'running';
      if (this.jobRunning) {
        this.jobExpected = false;
      }
      this.jobTitle.textContent = job ? describeJob(job) : 'No runs in this notebook yet.';
      this.jobLines.textContent = job ? job.lines.slice(-12).join('\n') : '';
      if (wasRunning && !this.jobRunning) {
        void this.loadKernels();
      }
    } catch (e) {
      this.jobRunning = false;
      this.jobTitle.textContent = errorText(e);
      this.jobLines.textContent = '';
    }
  }

  /** Ask the notebook's kernel (silently, when it is idle) what autotriton holds. */
  private async refreshKernelState(): Promise<void> {
    const nb = this.tracker.currentWidget;
    const kernel = nb && !nb.isDisposed ? nb.sessionContext.session?.kernel : null;
    if (!kernel) {
      this.stateWanted = false;
      this.kernelLine.textContent = nb ? 'Kernel: none running for this notebook.' : '';
      return;
    }
    if (kernel.status !== 'idle') {
      this.stateWanted = true; // asked again when the kernel goes idle
      return;
    }
    this.stateWanted = false;
    try {
      const spec = await kernel.spec;
      if (spec && spec.language.toLowerCase() !== 'python') {
        this.kernelLine.textContent = `Kernel: ${spec.display_name} is not a Python kernel.`;
        return;
      }
      const reply = await kernel.requestExecute({
        code: '',
        silent: true,
        store_history: false,
        user_expressions: { state: STATE_EXPRESSION }
      }).done;
      const result = (reply.content as any).user_expressions?.state;
      if (!result) {
        this.kernelLine.textContent = 'Kernel: no answer about autotriton.';
      } else if (result.status === 'ok') {
        const state = parseKernelState(result.data?.['text/plain'] ?? '');
        this.kernelLine.textContent = state
          ? `Kernel: ${describeKernelState(state)}`
          : 'Kernel: autotriton answered in an unknown form; update autotriton-jupyter in the kernel.';
      } else {
        this.kernelLine.textContent = `Kernel: ${kernelStateError(result.ename, result.evalue)}`;
      }
    } catch (e) {
      this.kernelLine.textContent = `Kernel: ${errorText(e)}`;
    }
  }

  // messages ---------------------------------------------------------------------------

  private say(text: string): void {
    this.message.classList.remove('jp-AutoTriton-problem');
    this.message.textContent = text;
  }

  private clearProblem(): void {
    if (this.message.classList.contains('jp-AutoTriton-problem')) {
      this.message.classList.remove('jp-AutoTriton-problem');
      this.message.textContent = '';
    }
  }

  private problem(text: string, actions: Notification.IAction[] = []): void {
    this.message.classList.add('jp-AutoTriton-problem');
    this.message.textContent = text;
    Notification.warning(text, { autoClose: actions.length ? false : 6000, actions });
  }

  // layout -----------------------------------------------------------------------------

  private section(title: string, ...children: Node[]): HTMLElement {
    const slug = title.toLowerCase().replace(/\s+/g, '-');
    return el(
      'section',
      { class: `jp-AutoTriton-section jp-AutoTriton-section-${slug}` },
      el('h3', {}, title),
      ...children
    );
  }

  private field(label: string, input: HTMLElement): HTMLElement {
    return el('label', { class: 'jp-AutoTriton-field' }, el('span', {}, label), input);
  }

  private notebookName = el('div', { class: 'jp-AutoTriton-notebook' });
  private preview = el('pre', { class: 'jp-AutoTriton-preview' });
  private samples = el('input', { class: 'jp-AutoTriton-samples jp-mod-styled' });
  private model = el('select', { class: 'jp-AutoTriton-model jp-mod-styled' });
  private maxTokens = el('input', { class: 'jp-AutoTriton-maxTokens jp-mod-styled' });
  private button = el(
    'button',
    { class: 'jp-AutoTriton-run jp-mod-styled jp-mod-accept' },
    'Tritonize this'
  );
  private message = el('div', { class: 'jp-AutoTriton-message', role: 'status' });
  private jobTitle = el('div', { class: 'jp-AutoTriton-job' });
  private jobLines = el('pre', { class: 'jp-AutoTriton-jobLines' });
  private search = el('input', { class: 'jp-AutoTriton-search jp-mod-styled' });
  private libraryNote = el('div', { class: 'jp-AutoTriton-libraryNote' });
  private library = el('ul', { class: 'jp-AutoTriton-library' });
  private settingsLine = el('div', { class: 'jp-AutoTriton-settings' });
  private kernelLine = el('div', { class: 'jp-AutoTriton-kernelState' });
  private refresh = el('button', { class: 'jp-AutoTriton-refresh jp-mod-styled' }, 'Refresh');

  private settings: Settings | null = null;
  private samplesTouched = false;
  private allKernels: Kernel[] = [];
  private libraryPath = 'the library';
  private searchTimer = 0;
  private cell: Cell | null = null;
  private session: NotebookPanel | null = null;
  private starting = false;
  private stateWanted = false;
  private jobRunning = false;
  private jobExpected = false;
}
