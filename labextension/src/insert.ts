/**
 * "Insert as cell" from a result view: the kernel opens a comm on the `autotriton.insert`
 * target with the code, and the notebook whose kernel it is gets a new code cell right
 * below the cell that holds the view. The kernel hears back whether it happened, so a
 * front end without this extension gets an honest message instead of a promise.
 */
import { NotebookActions, NotebookPanel, INotebookTracker } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';

import { cellFor } from './logic';

export const INSERT_TARGET = 'autotriton.insert';


function outputModelIds(nb: NotebookPanel): string[][] {
  return nb.content.widgets.map(cell => {
    const ids: string[] = [];
    const outputs = (cell.model as any).outputs;
    for (let i = 0; outputs && i < outputs.length; i++) {
      const data = outputs.get(i).data['application/vnd.jupyter.widget-view+json'] as any;
      if (data?.model_id) {
        ids.push(data.model_id);
      }
    }
    return ids;
  });
}

function insertBelow(nb: NotebookPanel, index: number, code: string): void {
  const notebook = nb.content;
  notebook.activeCellIndex = index;
  NotebookActions.insertBelow(notebook);
  notebook.activeCell?.model.sharedModel.setSource(code);
}

const registered = new WeakSet<Kernel.IKernelConnection>();

function register(nb: NotebookPanel): void {
  const kernel = nb.sessionContext.session?.kernel;
  if (!kernel || registered.has(kernel)) {
    return;
  }
  registered.add(kernel);
  kernel.registerCommTarget(INSERT_TARGET, (comm, msg: KernelMessage.ICommOpenMsg) => {
    const data = msg.content.data as { code?: unknown; view?: unknown };
    let ok = false;
    if (typeof data.code === 'string' && !nb.isDisposed) {
      const index = cellFor(
        outputModelIds(nb),
        typeof data.view === 'string' ? data.view : '',
        nb.content.activeCellIndex
      );
      insertBelow(nb, index, data.code);
      ok = true;
    }
    comm.send({ inserted: ok });
    comm.close();
  });
}

/** Listen for insert requests from every notebook's kernel, present and future. */
export function listenForInserts(tracker: INotebookTracker): void {
  tracker.widgetAdded.connect((_, nb) => {
    nb.sessionContext.kernelChanged.connect(() => register(nb));
    void nb.sessionContext.ready.then(() => register(nb));
  });
  tracker.forEach(nb => register(nb));
}
