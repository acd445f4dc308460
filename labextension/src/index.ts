/**
 * autotriton-jupyter's JupyterLab extension: the "Tritonize this" side panel and the
 * autotriton:tritonize command (palette, cell context menu, Accel Shift Y).
 */
import {
  ILabShell,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, ISessionContextDialogs } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { LabIcon } from '@jupyterlab/ui-components';

import { listenForInserts } from './insert';
import { TritonPanel } from './panel';

const COMMAND = 'autotriton:tritonize';
export const PANEL_ID = 'autotriton-panel';

const icon = new LabIcon({
  name: 'autotriton-jupyter:icon',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
    '<path d="M4 4h16v3h-6.5v13h-3V7H4z"/><path d="M15 13l5-3v6z"/></g></svg>'
});

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'autotriton-jupyter:panel',
  description: 'Tritonize the active cell; browse the kernel library; see the model.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette, ISessionContextDialogs, ILabShell, ISettingRegistry],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    palette: ICommandPalette | null,
    dialogs: ISessionContextDialogs | null,
    _labShell: ILabShell | null,
    settings: ISettingRegistry | null
  ) => {
    if (settings) {
      void keepWidgetState(settings);
    }
    listenForInserts(tracker);
    const panel = new TritonPanel(tracker, dialogs);
    panel.id = PANEL_ID;
    panel.title.icon = icon;
    panel.title.caption = 'autotriton: Tritonize this';
    app.shell.add(panel, 'right', { rank: 650 });

    app.commands.addCommand(COMMAND, {
      label: 'Tritonize this',
      caption: 'Run the active cell through %%autotriton in a new cell below it',
      icon,
      execute: async () => {
        app.shell.activateById(panel.id);
        await panel.tritonize();
      }
    });
    palette?.addItem({ command: COMMAND, category: 'autotriton' });
    app.contextMenu.addItem({ command: COMMAND, selector: '.jp-Notebook .jp-Cell', rank: 12 });
    app.commands.addKeyBinding({ command: COMMAND, keys: ['Accel Shift Y'], selector: '.jp-Notebook' });
  }
};

/**
 * Result views are widgets: unless the notebook keeps their state when it is saved, a
 * reloaded notebook shows "model not found" where the results were. Turn ipywidgets'
 * "save widget state" on, unless the user has set it either way.
 */
async function keepWidgetState(settings: ISettingRegistry): Promise<void> {
  const id = '@jupyter-widgets/jupyterlab-manager:plugin';
  try {
    const widgets = await settings.load(id);
    if (widgets.user.saveState === undefined) {
      await widgets.set('saveState', true);
    }
  } catch {
    // ipywidgets' manager is not installed: there are no widget results to keep.
  }
}

export default plugin;
