// The Jobs page: every job the token may see, filtered, sorted and paged by the server (GET
// /api/v1/jobs with state, team, name, node, labelSelector, sort, order, limit and cursor), so
// the browser holds one page however many jobs the store keeps. The filter lives in the URL
// (#/jobs?state=pending&team=a&sort=name), so links from other pages and the back button work.
// Refreshes every few seconds; rows link to #/jobs/ID.
import { api, poll } from '../api.js';
import { h, replace } from '../dom.js';
import * as fmt from '../format.js';
import './jobs.css';

const STATES = ['pending', 'admitted', 'placed', 'running', 'preempting', 'succeeded', 'failed',
  'cancelled'];
// The URL's filter keys, with the API parameter each becomes.
const FILTERS = [['state', 'state'], ['team', 'team'], ['name', 'name'], ['node', 'node'],
  ['labels', 'labelSelector']];
const DEFAULT_LIMIT = 50;
// Columns; `sort`: the server's sort key (each served by an index), `first`: the order of a
// first click. Submitted and age are the id's order (ids grow with submission); GPUs is not
// sortable (the store keeps no GPU column to index).
const COLUMNS = [
  { label: 'ID', sort: 'id', first: 'desc', cls: 'num' },
  { label: 'Name', sort: 'name', first: 'asc' },
  { label: 'State', sort: 'state', first: 'asc' },
  { label: 'Team', sort: 'team', first: 'asc' },
  { label: 'GPUs', cls: 'num' },
  { label: 'Submitted', cls: 'wide-only' },
  { label: 'Age', sort: 'id', first: 'desc', cls: 'num', flip: true },
  { label: 'Waiting / estimated start' },
];

function defaultOrder(sort) {
  return sort === 'id' ? 'desc' : 'asc';
}

// The page's view from the URL's query: filters, sort, order, limit, cursor and page number.
function viewOf(query) {
  const v = {};
  for (const [key] of FILTERS) v[key] = (query.get(key) || '').trim();
  v.sort = ['id', 'name', 'state', 'team'].includes(query.get('sort')) ? query.get('sort') : 'id';
  v.order = ['asc', 'desc'].includes(query.get('order')) ? query.get('order') : defaultOrder(v.sort);
  const limit = Number(query.get('limit'));
  v.limit = Number.isInteger(limit) && limit >= 1 && limit <= 1000 ? limit : DEFAULT_LIMIT;
  v.cursor = query.get('cursor') || '';
  v.page = Math.max(1, Number.parseInt(query.get('page'), 10) || 1);
  return v;
}

// "#/jobs?..." for a view; defaults are left out so URLs stay short.
export function hrefOf(v) {
  const q = new URLSearchParams();
  for (const [key] of FILTERS) if (v[key]) q.set(key, v[key]);
  if (v.sort !== 'id') q.set('sort', v.sort);
  if (v.order !== defaultOrder(v.sort)) q.set('order', v.order);
  if (v.limit !== DEFAULT_LIMIT) q.set('limit', String(v.limit));
  if (v.cursor) {
    q.set('cursor', v.cursor);
    q.set('page', String(v.page));
  }
  const s = q.toString();
  return s ? `#/jobs?${s}` : '#/jobs';
}

function apiPath(v) {
  const q = new URLSearchParams();
  for (const [key, param] of FILTERS) if (v[key]) q.set(param, v[key]);
  q.set('sort', v.sort);
  q.set('order', v.order);
  q.set('limit', String(v.limit));
  if (v.cursor) q.set('cursor', v.cursor);
  return `/api/v1/jobs?${q}`;
}

// GPUs the whole job holds: whole GPUs per worker times workers (MIG slices count as shares).
export function jobGpus(job) {
  const per = Number(job.resources?.['nvidia.com/gpu'] ?? 0);
  return per * Number(job.workers ?? 1);
}

function stateCell(state) {
  return h('span', { class: `job-state st-${state}`, 'data-field': 'state' }, state);
}

function waitingCell(job) {
  if (job.state !== 'pending') return h('span', { class: 'muted' }, '—');
  const parts = [];
  if (job.waiting) parts.push(h('div', { 'data-field': 'waiting' }, job.waiting));
  if ('estimatedStart' in job) {
    parts.push(h('div', { 'data-field': 'estimatedStart' }, 'Estimated start: ',
      job.estimatedStart ? fmt.time(job.estimatedStart) : 'unknown'));
  }
  return h('div', { class: 'why' }, parts.length ? parts : '—');
}

function jobRow(job, now) {
  const age = job.submitted ? (now - Date.parse(job.submitted)) / 1000 : null;
  return h('tr', { 'data-id': job.id },
    h('td', { class: 'num' }, h('a', { href: `#/jobs/${job.id}`, 'data-field': 'id' }, String(job.id))),
    h('td', { 'data-field': 'name' }, job.name),
    h('td', {}, stateCell(job.state)),
    h('td', { 'data-field': 'team' }, job.team),
    h('td', { class: 'num', 'data-field': 'gpus' }, fmt.gpus(jobGpus(job))),
    h('td', { class: 'wide-only' }, fmt.time(job.submitted)),
    h('td', { class: 'num' }, fmt.duration(age)),
    h('td', {}, waitingCell(job)));
}

function headerCell(col, v) {
  if (!col.sort) return h('th', { scope: 'col', class: col.cls }, col.label);
  // Age sorts by id too (younger = higher id) without being the column the sort is shown on.
  const active = v.sort === col.sort && !col.flip;
  const order = v.sort === col.sort ? (v.order === 'asc' ? 'desc' : 'asc') : col.first;
  const target = hrefOf({ ...v, sort: col.sort, order, cursor: '', page: 1 });
  return h('th', { scope: 'col', class: col.cls,
    'aria-sort': active ? (v.order === 'asc' ? 'ascending' : 'descending') : null },
  h('button', { type: 'button', 'data-sort': col.label.toLowerCase(),
    onclick: () => { location.hash = target; } },
  col.label, active ? (v.order === 'asc' ? ' ▲' : ' ▼') : ''));
}

function filterForm(v) {
  const field = (key, label, attrs = {}) => h('label', {}, label,
    h('input', { name: key, value: v[key], autocomplete: 'off', spellcheck: 'false', ...attrs }));
  const state = h('select', { name: 'state' }, h('option', { value: '' }, 'any'),
    STATES.map((s) => h('option', { value: s, selected: v.state === s }, s)));
  const form = h('form', { class: 'job-filter', role: 'search', 'aria-label': 'Filter jobs' },
    h('label', {}, 'State', state),
    field('team', 'Team'),
    field('name', 'Name (exact)'),
    field('node', 'Node'),
    field('labels', 'Labels', { placeholder: 'tier=gold,!debug' }),
    h('button', { type: 'submit', class: 'primary' }, 'Apply'),
    h('a', { href: '#/jobs' }, 'Clear'));
  const apply = (e) => {
    e?.preventDefault();
    const data = new FormData(form);
    const next = { ...v, cursor: '', page: 1 };
    for (const [key] of FILTERS) next[key] = String(data.get(key) || '').trim();
    location.hash = hrefOf(next);
  };
  form.addEventListener('submit', apply);
  state.addEventListener('change', apply);
  return form;
}

function pager(v, data) {
  const link = (label, cursor, page, rel) => (cursor === null ? h('span', { class: 'off', 'aria-disabled': 'true' }, label)
    : h('a', { href: hrefOf({ ...v, cursor, page }), rel, 'data-page': rel }, label));
  return h('nav', { class: 'pager', 'aria-label': 'Pages' },
    link('First', data.prevCursor ? '' : null, 1, 'first'),
    link('Previous', data.prevCursor ?? null, Math.max(1, v.page - 1), 'prev'),
    h('span', { 'data-field': 'page' }, `Page ${fmt.count(v.page)}`),
    link('Next', data.nextCursor ?? null, v.page + 1, 'next'));
}

function countLine(v, data) {
  const n = data.items.length;
  if (typeof data.total === 'number') {
    const first = (v.page - 1) * v.limit;
    // Keyset pages know their number only while paging from the first page.
    const range = n ? `${fmt.count(first + 1)}–${fmt.count(first + n)} of ` : '';
    return h('p', { class: 'job-count' }, h('span', { 'data-field': 'total' }, fmt.plural(data.total, 'job')),
      n ? ` · showing ${range}${fmt.count(data.total)}` : '');
  }
  return h('p', { class: 'job-count' }, `${fmt.plural(n, 'job')} on this page`,
    data.hasMore ? ' (more match: labels are matched by the server while paging)' : '');
}

export function render(root, params) {
  const v = viewOf(params.query);
  const result = h('div', { 'aria-busy': 'true' }, h('p', { class: 'muted' }, 'Loading…'));
  root.append(h('h1', {}, 'Jobs'), filterForm(v), result);
  let controller = null;

  const stop = poll(async () => {
    controller?.abort();
    controller = new AbortController();
    const data = await api(apiPath(v), { signal: controller.signal });
    const now = Date.now();
    const focused = result.contains(document.activeElement) && document.activeElement;
    const focusKey = focused && (focused.getAttribute('href') || focused.dataset.sort);
    const table = h('div', { class: 'scroll-x' },
      h('table', { class: 'jobs' },
        h('caption', { class: 'muted' },
          'Sorted by the server; times are local (UTC on hover).'),
        h('thead', {}, h('tr', {}, COLUMNS.map((c) => headerCell(c, v)))),
        h('tbody', {}, data.items.length ? data.items.map((j) => jobRow(j, now))
          : h('tr', {}, h('td', { colspan: COLUMNS.length, class: 'muted' }, 'No jobs match this filter.')))));
    replace(result, countLine(v, data), table, pager(v, data));
    result.removeAttribute('aria-busy');
    if (focusKey) {
      result.querySelector(`[href="${CSS.escape(focusKey)}"], [data-sort="${CSS.escape(focusKey)}"]`)?.focus();
    }
  });
  return () => {
    stop();
    controller?.abort();
  };
}
