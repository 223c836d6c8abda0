// The one way pages reach the server: fetch() of the public JSON API with the token kept in
// sessionStorage, errors as ApiError carrying the server's message (shown in the page's error
// banner), and poll() for live pages. A 401 or 403 opens the token prompt.
import { h, replace } from './dom.js';
import { getToken, promptForToken } from './token.js';

// How often live pages refresh (milliseconds). Polling, not server-sent events: see
// docs/web-ui.md.
export const POLL_MS = 5000;

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status; // HTTP status; 0 when the server could not be reached
    this.code = code; // the API's error code ("NotFound", ...)
  }
}

// GET (or `method`) `path` and return the parsed JSON body; throws ApiError.
export async function api(path, { method = 'GET', body, signal } = {}) {
  const headers = { Accept: 'application/json' };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, { method, headers, body, signal, cache: 'no-store' });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'Unavailable', `cannot reach the trainyard server (${e.message})`);
  }
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const err = (data && data.error) || {};
    const e = new ApiError(res.status, err.code || res.statusText, err.message || text || res.statusText);
    if (res.status === 401 || res.status === 403) promptForToken(e.message);
    throw e;
  }
  return data;
}

// Shows `error` (an ApiError or any Error) in the banner above the page; null hides it.
export function showError(error) {
  const banner = document.getElementById('error');
  if (!banner) return;
  if (!error) {
    banner.hidden = true;
    replace(banner);
    return;
  }
  const where = error.status ? ` (HTTP ${error.status}${error.code ? ` ${error.code}` : ''})` : '';
  replace(banner, h('strong', {}, 'Error'), `${where}: ${error.message}`);
  banner.hidden = false;
}

// Calls `tick` now and every `ms` while the page is visible; a hidden tab stops polling (no
// load on the server for a tab nobody looks at) and catches up as soon as it is shown again.
// Errors go to the banner and polling goes on. Returns the function that stops it.
export function poll(tick, ms = POLL_MS) {
  let timer = null;
  let stopped = false;
  let running = false;
  const live = document.getElementById('live');
  const run = async () => {
    if (stopped || running) return;
    running = true;
    clearTimeout(timer);
    try {
      await tick();
      showError(null);
      if (live) live.textContent = `Updated ${new Date().toLocaleTimeString()}`;
    } catch (e) {
      if (e.name !== 'AbortError') showError(e);
    } finally {
      running = false;
      if (!stopped && document.visibilityState === 'visible') timer = setTimeout(run, ms);
    }
  };
  const onVisibility = () => {
    if (document.visibilityState === 'visible') run();
    else clearTimeout(timer);
  };
  document.addEventListener('visibilitychange', onVisibility);
  run();
  return () => {
    stopped = true;
    clearTimeout(timer);
    document.removeEventListener('visibilitychange', onVisibility);
  };
}
