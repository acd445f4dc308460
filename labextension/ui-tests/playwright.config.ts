/**
 * Galata's Playwright settings, with Debian's Chromium (Playwright's own browser download
 * is not used) and a real `jupyter lab` from the checkout's .venv, started with the tiny
 * model and a temporary kernel library.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

// eslint-disable-next-line @typescript-eslint/no-var-requires
const baseConfig = require('@jupyterlab/galata/lib/playwright-config');

const port = process.env.AUTOTRITON_UI_PORT ?? '8765';
// Set once in the runner; its workers inherit it, so all of them see the same folder.
process.env.AUTOTRITON_UI_TMP ??= fs.mkdtempSync(path.join(os.tmpdir(), 'autotriton-ui-'));
const tmp = process.env.AUTOTRITON_UI_TMP;
const root = path.join(tmp, 'notebooks');
fs.mkdirSync(root, { recursive: true });
const venv = path.resolve(__dirname, '..', '..', '.venv', 'bin');

module.exports = {
  ...baseConfig,
  timeout: 300_000,
  retries: 0,
  workers: 1,
  reporter: [['list']],
  use: {
    ...baseConfig.use,
    baseURL: `http://127.0.0.1:${port}`,
    viewport: { width: 1400, height: 900 },
    launchOptions: { executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium' },
    video: 'off',
    trace: 'off'
  },
  webServer: {
    command: `${venv}/jupyter lab --config jupyter_server_test_config.py`,
    url: `http://127.0.0.1:${port}/lab`,
    timeout: 120_000,
    reuseExistingServer: false,
    env: {
      ...process.env,
      PATH: `${venv}:${process.env.PATH}`,
      AUTOTRITON_UI_PORT: port,
      AUTOTRITON_LIBRARY: path.join(tmp, 'library.sqlite'),
      AUTOTRITON_CONFIG: path.join(tmp, 'no-config.toml'),
      AUTOTRITON_MODEL_NAME: 'tiny',
      JUPYTERLAB_GALATA_ROOT_DIR: root
    }
  }
};
