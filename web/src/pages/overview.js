// The overview: the cluster at a glance, refreshed every few seconds. GPUs in use, free and
// allocated-but-idle; jobs by state; the queue and how long it has waited; firing alerts; the
// spend today against the team budgets; GPUs in use over the time the page has been open.
// Reads GET /api/v1/summary and GET /api/v1/alerts (a team token: its team's numbers).
import { api, poll } from '../api.js';
import { lineChart } from '../chart.js';
import { h, replace } from '../dom.js';
import * as fmt from '../format.js';

const JOB_STATES = ['pending', 'admitted', 'placed', 'running', 'preempting', 'succeeded', 'failed',
  'cancelled'];
const MAX_ALERTS = 5;
const HISTORY_POINTS = 720; // an hour at the default poll interval

// A term/value row; `field` names the value for tests (data-field="gpus.inUse").
function row(term, field, value, hint) {
  return [h('dt', {}, term, hint ? h('span', { class: 'hint' }, ` ${hint}`) : null),
    h('dd', { 'data-field': field }, value)];
}

function card(title, id, ...body) {
  return h('section', { class: 'card', 'aria-labelledby': id }, h('h2', { id }, title), ...body);
}

function gpuCard(g) {
  return card('GPUs', 'ov-gpus',
    h('p', { class: 'big' }, h('span', { 'data-field': 'gpus.headline' }, `${fmt.count(g.inUse)} of ${fmt.gpus(g.total)}`),
      h('span', { class: 'unit' }, ' in use')),
    h('dl', {},
      row('In use', 'gpus.inUse', fmt.count(g.inUse)),
      row('Free', 'gpus.free', fmt.count(g.free)),
      row('Allocated but idle', 'gpus.idleAllocated', fmt.count(g.idleAllocated),
        `(below ${g.idleBelowPercent} % utilization)`)));
}

function jobsCard(jobs) {
  return card('Jobs', 'ov-jobs',
    h('dl', {}, JOB_STATES.map((s) => row(
      h('a', { href: `#/jobs?state=${s}` }, s[0].toUpperCase() + s.slice(1)), `jobs.${s}`,
      fmt.count(jobs[s])))));
}

function queueCard(q) {
  return card('Queue', 'ov-queue',
    h('p', { class: 'big' }, h('span', { 'data-field': 'queue.pending' }, fmt.count(q.pending)),
      h('span', { class: 'unit' }, q.pending === 1 ? ' job waiting' : ' jobs waiting')),
    h('dl', {},
      row('Held', 'queue.held', fmt.count(q.held)),
      row('Median wait', 'queue.waitMedian', fmt.duration(q.waitMedianSeconds)),
      row('Longest wait', 'queue.waitMax', fmt.duration(q.waitMaxSeconds))));
}

function alertsCard(summary, items) {
  const firing = items.filter((a) => a.state === 'firing').slice(0, MAX_ALERTS);
  return card('Alerts firing', 'ov-alerts',
    h('p', { class: 'big' }, h('span', { 'data-field': 'alerts.firing' }, fmt.count(summary.firing)),
      h('span', { class: 'unit' }, ` (${fmt.count(summary.critical)} critical, ${fmt.count(summary.warning)} warning)`)),
    firing.length === 0 ? h('p', { class: 'muted' }, 'None firing.')
      : h('ul', { class: 'alerts' }, firing.map((a) => h('li', { class: `sev-${a.severity}` },
        h('span', { class: 'badge' }, a.severity), ' ', a.summary, ' · since ', fmt.time(a.startedAt)))));
}

function spendCard(spend) {
  const budgets = spend.budgets.map((b) => {
    const ratio = b.budgetUsd > 0 ? b.spentUsd / b.budgetUsd : 0;
    return h('li', {},
      h('span', {}, `${b.team}: ${fmt.usd(b.spentUsd)} of ${fmt.usd(b.budgetUsd)} this ${b.period}`),
      h('meter', { min: 0, max: 1, low: 0.8, high: 0.95, optimum: 0, value: Math.min(ratio, 1),
        'aria-label': `${b.team} budget used` }));
  });
  return card('Spend today', 'ov-spend',
    h('p', { class: 'big' }, h('span', { 'data-field': 'spend.today' }, fmt.usd(spend.todayUsd))),
    h('p', { class: 'muted' }, 'Since ', fmt.time(spend.since), ' (the UTC day)'),
    budgets.length ? h('ul', { class: 'budgets' }, budgets)
      : h('p', { class: 'muted' }, 'No team has a budget (teams[].budget in the server config).'));
}

export function render(root) {
  const cards = h('div', { class: 'cards', 'aria-busy': 'true' }, h('p', { class: 'muted' }, 'Loading…'));
  const chartBox = h('div', { class: 'chart' });
  root.append(h('h1', {}, 'Overview'), cards,
    h('section', { class: 'card wide', 'aria-labelledby': 'ov-history' },
      h('h2', { id: 'ov-history' }, 'GPUs in use since this page opened'), chartBox));
  const chart = lineChart(chartBox, { series: [{ label: 'in use', unit: 'GPUs' },
    { label: 'allocated but idle', unit: 'GPUs' }], height: 200 });
  const history = [[], [], []];

  const stop = poll(async () => {
    const [summary, alerts] = await Promise.all([api('/api/v1/summary'), api('/api/v1/alerts')]);
    // A keyboard user's focus on a link in the cards survives the refresh.
    const focused = cards.contains(document.activeElement) && document.activeElement.getAttribute('href');
    replace(cards, gpuCard(summary.gpus), jobsCard(summary.jobs), queueCard(summary.queue),
      alertsCard(summary.alerts, alerts.items), spendCard(summary.spend));
    cards.removeAttribute('aria-busy');
    if (focused) cards.querySelector(`a[href="${focused}"]`)?.focus();
    history[0].push(Date.parse(summary.time) / 1000);
    history[1].push(summary.gpus.inUse);
    history[2].push(summary.gpus.idleAllocated);
    if (history[0].length > HISTORY_POINTS) history.forEach((col) => col.shift());
    chart.setData(history);
  });
  return () => {
    stop();
    chart.destroy();
  };
}
