// The web UI's entry point: a hash router (#/, #/gpus, #/jobs, #/jobs/ID, #/queues, #/cost,
// #/submit)
// and the nav bar. Each page is a module in pages/ exporting render(root, params) that fills
// `root` and returns a cleanup function (stop polling, destroy charts); see docs/web-ui.md.
import './style.css';
import { h, replace } from './dom.js';
import { showError } from './api.js';
import { promptForToken } from './token.js';
import * as overview from './pages/overview.js';
import * as gpus from './pages/gpus.js';
import * as jobs from './pages/jobs.js';
import * as job from './pages/job.js';
import * as queues from './pages/queues.js';
import * as cost from './pages/cost.js';
import * as submit from './pages/submit.js';

// `nav`: the nav link the page belongs under; `params`: named regex groups.
const ROUTES = [
  { path: /^\/$/, page: overview, title: 'Overview', nav: '#/' },
  { path: /^\/gpus$/, page: gpus, title: 'GPUs', nav: '#/gpus' },
  { path: /^\/jobs$/, page: jobs, title: 'Jobs', nav: '#/jobs' },
  { path: /^\/jobs\/(?<id>\d+)$/, page: job, title: 'Job', nav: '#/jobs' },
  { path: /^\/queues$/, page: queues, title: 'Queues', nav: '#/queues' },
  { path: /^\/cost$/, page: cost, title: 'Cost', nav: '#/cost' },
  { path: /^\/submit$/, page: submit, title: 'Submit', nav: '#/submit' },
];
const NAV = [['#/', 'Overview'], ['#/gpus', 'GPUs'], ['#/jobs', 'Jobs'], ['#/queues', 'Queues'],
  ['#/cost', 'Cost'], ['#/submit', 'Submit']];

let cleanup = null;

// "#/jobs/12?attempt=2" -> {path: "/jobs/12", query: URLSearchParams("attempt=2")}.
function parseHash(hash) {
  const rest = hash.replace(/^#/, '') || '/';
  const q = rest.indexOf('?');
  return q < 0 ? { path: rest, query: new URLSearchParams() }
    : { path: rest.slice(0, q), query: new URLSearchParams(rest.slice(q + 1)) };
}

function route() {
  // In-page anchors ("#main") are not routes: leave the current page alone.
  if (location.hash && !location.hash.startsWith('#/')) return;
  const { path, query } = parseHash(location.hash);
  const main = document.getElementById('main');
  if (cleanup) cleanup();
  cleanup = null;
  showError(null);
  document.getElementById('live').textContent = '';
  replace(main);
  const found = ROUTES.map((r) => ({ r, m: path.match(r.path) })).find((x) => x.m);
  for (const a of document.querySelectorAll('#nav a')) {
    if (found && a.getAttribute('href') === found.r.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  if (!found) {
    document.title = 'Not found · trainyard';
    replace(main, h('h1', {}, 'Page not found'),
      h('p', {}, `Nothing lives at #${path}. `, h('a', { href: '#/' }, 'Back to the overview')));
    return;
  }
  document.title = `${found.r.title} · trainyard`;
  try {
    cleanup = found.r.page.render(main, { ...(found.m.groups || {}), query }) || null;
  } catch (e) {
    showError(e);
  }
}

function start() {
  replace(document.getElementById('nav'),
    NAV.map(([href, label]) => h('a', { href }, label)));
  document.getElementById('token-button').addEventListener('click', () => promptForToken());
  window.addEventListener('hashchange', () => {
    route();
    // Keyboard and screen-reader users land on the new page's content, not the old link.
    document.getElementById('main').focus({ preventScroll: true });
  });
  window.addEventListener('trainyard:token', route);
  route();
}

start();
