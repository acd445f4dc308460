/**
 * The "Tritonize this" panel in a real JupyterLab: the library seeded by the server's
 * config is listed and searchable; the button turns the active cell into a %%autotriton
 * cell below it, runs it with the tiny model, and the result view renders in its output.
 */
import { expect, test } from '@jupyterlab/galata';
import * as path from 'path';

const MODULE = [
  'import torch',
  'import torch.nn as nn',
  '',
  'class Model(nn.Module):',
  '    def forward(self, x, y):',
  '        return torch.relu(x + y)',
  '',
  'def get_inputs():',
  '    return [torch.randn(8, 16), torch.randn(8, 16)]',
  '',
  'def get_init_inputs():',
  '    return []'
].join('\n');

const SCREENSHOT = path.resolve(__dirname, '..', '..', '..', 'docs', 'panel.png');

test('Tritonize this runs the active cell; the library lists and filters kernels', async ({
  page
}) => {
  await page.notebook.createNew('panel.ipynb');
  await page.sidebar.openTab('autotriton-panel');
  const panel = page.locator('#autotriton-panel');
  const message = panel.locator('.jp-AutoTriton-message');

  // An empty cell is refused with a message that says what to do.
  await page.notebook.selectCells(0);
  await panel.getByRole('button', { name: 'Tritonize this' }).click();
  await expect(message).toContainText('The active cell is empty');

  // The kernel library: the accepted kernel, then the search.
  const kernels = panel.locator('.jp-AutoTriton-kernel');
  await expect(kernels).toHaveCount(1);
  await expect(kernels.first().locator('.jp-AutoTriton-kernelName')).toHaveText('FastAddRelu');
  await expect(kernels.first()).toContainText('add_relu');
  const search = panel.locator('.jp-AutoTriton-search');
  await search.fill('softmax');
  await expect(kernels).toHaveCount(0);
  await expect(panel.locator('.jp-AutoTriton-libraryNote')).toContainText('No kernel matches');
  await search.fill('relu');
  await expect(kernels).toHaveCount(1);

  // The module cell: the preview follows it.
  // Through the model, not typed: the editor's auto-indent would reshape typed code.
  await page.evaluate(source => {
    const notebook = (window as any).jupyterapp.shell.currentWidget.content;
    notebook.widgets[0].model.sharedModel.setSource(source);
  }, MODULE);
  await page.notebook.selectCells(0);
  await expect(panel.locator('.jp-AutoTriton-preview')).toContainText('class Model(nn.Module):');

  // One sample of the tiny model, few tokens: a run of well under a minute on a CPU.
  await panel.locator('.jp-AutoTriton-samples').fill('1');
  await panel.locator('.jp-AutoTriton-model').selectOption('tiny');
  await panel.locator('.jp-AutoTriton-maxTokens').fill('64');
  await panel.getByRole('button', { name: 'Tritonize this' }).click();

  const cells = page.locator('.jp-Notebook .jp-Cell');
  await expect(cells).toHaveCount(2);
  const magic = cells.nth(1);
  await expect(magic.locator('.jp-InputArea')).toContainText(
    '%%autotriton -n 1 --model tiny --max-tokens 64'
  );
  await expect(magic.locator('.jp-InputArea')).toContainText('def get_init_inputs():');
  // The verdict line of the result view (the tiny model's kernel rarely passes: either
  // verdict is a rendered result).
  await expect(magic.locator('.jp-OutputArea')).toContainText(
    /autotriton: (PASS|no candidate passed)/,
    { timeout: 240_000 }
  );
  await expect(magic.locator('.jp-OutputArea')).toContainText('round/sample');
  await expect(message).toContainText('finished');

  // The panel saw the run's progress file, and the kernel now holds the tiny model.
  await expect(panel.locator('.jp-AutoTriton-job')).toContainText(/Model.*: (done|failed)/);
  await expect(panel.locator('.jp-AutoTriton-kernelState')).toContainText('loaded', {
    timeout: 30_000
  });

  // The picture in the README: the panel beside the result view, without the toast
  // left from the refusal above (headless, its timer never runs out).
  for (const close of await page.locator('.Toastify__close-button').all()) {
    await close.click({ force: true });
  }
  await expect(page.locator('.Toastify__toast')).toHaveCount(0);
  await page.sidebar.close('left');
  await magic.locator('.jp-OutputArea').getByText(/autotriton: /).first().scrollIntoViewIfNeeded();
  await page.screenshot({ path: SCREENSHOT });

  // "Insert as cell" puts the kernel's code in a new cell right below the cell that holds
  // the view, at once (known candidates replayed as the model, so there is code).
  const replay = path.resolve(__dirname, '..', '..', '..', 'examples', 'candidates', 'add_relu');
  await page.notebook.addCell('code', '');
  await page.evaluate(
    ([source]) => {
      const notebook = (window as any).jupyterapp.shell.currentWidget.content;
      notebook.widgets[2].model.sharedModel.setSource(source);
    },
    [`%%autotriton -n 1 --model files:${replay} --name Replayed\n${MODULE}`]
  );
  await page.notebook.runCell(2);
  const third = cells.nth(2);
  await expect(third.locator('.jp-OutputArea')).toContainText('autotriton:', { timeout: 240_000 });
  const before = await cells.count();
  await third.getByRole('button', { name: 'Insert as cell' }).click();
  await expect(cells).toHaveCount(before + 1);
  await expect(cells.nth(3).locator('.jp-InputArea')).toContainText('class ModelNew');
  await expect(third.locator('.jp-OutputArea')).toContainText('put in a new cell below this one');

  // The result survives a save, the end of the kernel and a reload of the page: the
  // notebook keeps the view's widget state (the panel turns that setting on).
  await page.notebook.save();
  await page.evaluate(async () => {
    await (window as any).jupyterapp.serviceManager.sessions.shutdownAll();
  });
  // A plain browser reload; the workspace opens panel.ipynb again.
  await page.evaluate(() => window.location.reload());
  await page.waitForSelector('.jp-Notebook .jp-Cell', { timeout: 60_000 });
  const reloaded = page.locator('.jp-Notebook .jp-Cell').nth(1).locator('.jp-OutputArea');
  await expect(reloaded).toContainText(/autotriton: (PASS|no candidate passed)/, {
    timeout: 60_000
  });
  await expect(reloaded).not.toContainText('model not found');
});
