// The Queues and teams page: per team its quota per GPU model, the GPUs it uses, borrows from
// its cohort and lends to it, its place in the fair policy's order (weight and dominant
// share), its pending and running jobs (links to the job list), and its budget and spend.
// Live: polls GET /api/v1/queues and GET /api/v1/cost (this month's spend per team). A team
// token sees its own row only.
import { api, poll } from '../api.js';
import { h, replace } from '../dom.js';
import * as fmt from '../format.js';
import './gpus.css';

// {"H100-80GB": 2} -> "H100-80GB: 2 GPUs"; {} -> `empty`.
function perModel(map, empty, field) {
  const entries = Object.entries(map || {});
  if (!entries.length) return h('span', { 'data-field': field, class: 'muted' }, empty);
  return h('span', { 'data-field': field }, entries.map(([m, n], i) => [i ? ', ' : '',
    h('span', { class: 'nowrap' }, `${m === '*' ? 'all models' : m}: ${fmt.gpus(n)}`)]));
}

function share(x) {
  return x === null || x === undefined ? '—' : `${fmt.percent(x * 100)}`;
}

function budgetCell(row, spentMonth) {
  const b = row.budget;
  if (!b) {
    return h('span', { 'data-field': `${row.name}.spend` },
      spentMonth === undefined ? h('span', { class: 'muted' }, 'no budget')
        : [fmt.usd(spentMonth), h('span', { class: 'hint' }, ' this month, no budget')]);
  }
  const ratio = b.budgetUsd > 0 ? b.spentUsd / b.budgetUsd : 0;
  return h('span', { class: 'budget-cell' },
    h('span', { 'data-field': `${row.name}.spend` }, `${fmt.usd(b.spentUsd)} of ${fmt.usd(b.budgetUsd)} ${b.period === 'day' ? 'today (UTC)' : 'this month (UTC)'}`),
    h('meter', { min: 0, max: 1, low: 0.8, high: 0.95, optimum: 0, value: Math.min(ratio, 1),
      'aria-label': `${row.name} budget used` }));
}

function jobsLink(team, state, n) {
  return h('a', { href: `#/jobs?team=${encodeURIComponent(team)}&state=${state}`,
    'data-field': `${team}.${state}`, 'aria-label': `${fmt.plural(n, 'job')} ${state} in ${team}` }, fmt.count(n));
}

function table(q, spend) {
  const cols = ['Team', 'Weight', 'Fair-share order', 'Dominant share', 'Quota', 'GPUs in use', 'Borrowed',
    'Lent', 'Pending', 'Running', 'Budget and spend'];
  return h('div', { class: 'scroll-x' }, h('table', { class: 'queues' },
    h('caption', { class: 'gq-sr' }, 'Teams and their queues'),
    h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, q.items.map((r) => labelled(cols, h('tr', { 'data-team': r.name },
      h('th', { scope: 'row' }, r.name, r.cohort ? h('span', { class: 'hint' }, ` cohort ${r.cohort}`) : null),
      h('td', { class: 'num', 'data-field': `${r.name}.weight` }, fmt.count(r.weight)),
      h('td', { class: 'num', 'data-field': `${r.name}.position` },
        r.fairShare ? `${r.fairShare.position} of ${r.fairShare.of}` : '—'),
      h('td', { class: 'num', 'data-field': `${r.name}.share`,
        title: r.fairShare ? `weighted: ${share(r.fairShare.weightedShare)}; past usage: ${share(r.fairShare.pastUsageShare)}` : null },
      share(r.fairShare?.dominantShare)),
      h('td', {}, perModel(r.quota, 'unlimited', `${r.name}.quota`)),
      h('td', {}, h('span', { 'data-field': `${r.name}.gpusInUse` }, fmt.gpus(r.gpusInUse))),
      h('td', {}, perModel(r.borrowed, 'none', `${r.name}.borrowed`)),
      h('td', {}, perModel(r.lent, 'none', `${r.name}.lent`)),
      h('td', { class: 'num' }, jobsLink(r.name, 'pending', r.pending)),
      h('td', { class: 'num' }, jobsLink(r.name, 'running', r.running)),
      h('td', {}, budgetCell(r, spend[r.name]))))))));
}

// Each cell carries its column's name, shown beside the value where the table stacks (narrow).
function labelled(cols, tr) {
  [...tr.children].forEach((cell, i) => cell.setAttribute('data-label', cols[i]));
  return tr;
}

const POLICY_NOTE = {
  fair: 'Teams are served in fair-share order: the lowest weighted dominant share (GPUs held over the cluster\'s, divided by the weight) first. A team over its quota borrows unused quota of its cohort; a team within its quota may reclaim what it lent.',
};

export function render(root) {
  const lead = h('p', { class: 'lead' }, h('span', { class: 'muted' }, 'Loading…'));
  const box = h('div', { 'aria-busy': 'true' });
  root.append(h('h1', {}, 'Queues and teams'), lead,
    h('section', { 'aria-labelledby': 'queues-teams' }, h('h2', { id: 'queues-teams' }, 'Teams'), box));
  const stop = poll(async () => {
    const [q, cost] = await Promise.all([api('/api/v1/queues'), api('/api/v1/cost')]);
    const spend = Object.fromEntries((cost.teams || []).map((t) => [t.team, t.cost_usd]));
    const focused = root.contains(document.activeElement) && document.activeElement.getAttribute('href');
    replace(lead, 'Scheduling policy: ', h('strong', { 'data-field': 'policy' }, q.policy), '. ',
      POLICY_NOTE[q.policy] || 'The fair-share order is the order the fair policy would serve the teams in.');
    replace(box, q.items.length ? table(q, spend) : h('p', { class: 'muted' }, 'No team has submitted a job yet.'));
    box.removeAttribute('aria-busy');
    if (focused) root.querySelector(`a[href="${focused}"]`)?.focus();
  });
  return stop;
}
