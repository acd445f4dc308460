/**
 * The server extension's REST API (autotriton/...), through ServerConnection so the
 * token and the XSRF cookie go with every request.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { Job, Kernel, serverErrorMessage } from './logic';

/** A request that failed; the message is what the user reads. */
export class ApiError extends Error {}

export interface KernelDetail extends Kernel {
  code: string;
  snippet: string;
}

export interface ModelChoice {
  name: string;
  backend: string;
  available: boolean;
  needs: string;
}

export interface Settings {
  model: { name: string; adapter: string | null; available: boolean; needs: string };
  n: number;
  rounds: number;
  max_tokens: number;
  models: ModelChoice[];
  adapters: { name: string; base: string; created: number; active: boolean }[];
  library: string;
}

/** GET autotriton/<path>, parsed as JSON; an ApiError carries the server's message. */
export async function get<T>(path: string): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, 'autotriton', path);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, {}, settings);
  } catch {
    throw new ApiError(serverErrorMessage(0, null));
  }
  const text = await response.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // a page from Jupyter itself (its 404 is HTML): the message says what it means
  }
  if (!response.ok || body === null) {
    throw new ApiError(serverErrorMessage(response.ok ? 404 : response.status, body));
  }
  return body as T;
}

export const api = {
  kernels: (q: string) =>
    get<{ library: string; kernels: Kernel[] }>(`kernels?q=${encodeURIComponent(q)}`),
  kernel: (name: string) => get<KernelDetail>(`kernels/${encodeURIComponent(name)}`),
  settings: () => get<Settings>('settings'),
  jobs: () => get<{ jobs: Job[] }>('jobs')
};
