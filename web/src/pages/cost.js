// The Cost page: what was spent over a period (today, 7 days, 30 days), by team and by pool over
// time, the work lost to interruptions and preemptions, the idle share of the bill, the jobs that
// spent most, and a CSV download of the same report. Reads GET /api/v1/cost and
// GET /api/v1/cost/series for one fixed [since, until) window, so the CSV
// (GET /api/v1/cost?format=csv with the same window) has exactly the numbers shown. A team token
// sees its team's spend only (no pools, no idle).
import { api, poll, showError } from '../api.js';
import { lineChart } from '../chart.js';
import { h, replace } from '../dom.js';
import * as fmt from '../format.js';
import { getToken } from '../token.js';

const PERIODS = [
  { key: 'today', label: 'Today (UTC)', since: () => new Date().toISOString().slice(0, 10), step: 'hour' },
  { key: '7d', label: '7 days', since: () => '-7d', step: 'hour' },
  { key: '30d', label: '30 days', since: () => '-30d', step: 'day' },
];
const TOP_JOBS = 10;
const REFRESH_MS = 30000;

// `raw`: the API's number, kept in data-value for tests and for copying exact figures.
function row(term, field, value, hint, raw) {
  return [h('dt', {}, term, hint ? h('span', { class: 'hint' }, ` ${hint}`) : null),
    h('dd', { 'data-field': field, 'data-value': raw }, value)];
}

function card(title, id, ...body) {
  return h('section', { class: 'card', 'aria-labelledby': id }, h('h2', { id }, title), ...body);
}

function gpuHours(x) {
  const v = Number(x || 0);
  // Three significant digits below 1 GPU-hour (a few minutes of one GPU is 0.05 GPU-h).
  const text = v === 0 || Math.abs(v) >= 1 ? v.toLocaleString(undefined, { maximumFractionDigits: 2 })
    : v.toPrecision(3);
  return `${text} GPU-h`;
}

// A table inside a box that scrolls sideways on a narrow screen (the page itself does not).
function table(caption, heads, rows) {
  return h('div', { class: 'scroll-x' }, h('table', { 'aria-label': caption },
    h('thead', {}, h('tr', {}, heads.map(([label, num]) => h('th', { scope: 'col', class: num ? 'num' : null }, label)))),
    h('tbody', {}, rows)));
}

function num(field, value, raw) {
  return h('td', { class: 'num', 'data-field': field, 'data-value': raw }, value);
}

function totalsCards(rep) {
  const t = rep.total;
  const team = rep.scope === 'team';
  const idleShare = t.cost_usd > 0 ? (100 * t.idle_cost_usd) / t.cost_usd : 0;
  return [
    card(team ? 'Your team spent' : 'Spend', 'cost-spend',
      h('p', { class: 'big' }, h('span', { 'data-field': 'total.cost', 'data-value': t.cost_usd }, fmt.usd(t.cost_usd))),
      h('dl', {},
        row('GPU-hours', 'total.gpuHours', gpuHours(t.gpu_hours), team ? '(held by its jobs)' : '(billed)', t.gpu_hours),
        row('From', 'since', fmt.time(rep.since)),
        row('To', 'until', fmt.time(rep.until)))),
    card('Lost work', 'cost-lost',
      h('p', { class: 'big' }, h('span', { 'data-field': 'total.lostCost', 'data-value': t.lost_cost_usd }, fmt.usd(t.lost_cost_usd))),
      h('dl', {},
        row('GPU-hours lost', 'total.lostGpuHours', gpuHours(t.lost_gpu_hours), '(since the last checkpoint)', t.lost_gpu_hours),
        row('Interruptions', 'total.interruptions', fmt.count(t.interruptions), null, t.interruptions))),
    team ? card('Idle', 'cost-idle', h('p', { class: 'muted' },
      'Idle capacity is not charged to teams; an admin token shows the idle share of the bill.'))
      : card('Idle', 'cost-idle',
        h('p', { class: 'big' }, h('span', { 'data-field': 'total.idleShare', 'data-value': idleShare }, fmt.percent(idleShare)),
          h('span', { class: 'unit' }, ' of the bill')),
        h('dl', {},
          row('Idle cost', 'total.idleCost', fmt.usd(t.idle_cost_usd), null, t.idle_cost_usd),
          row('Idle GPU-hours', 'total.idleGpuHours', gpuHours(t.idle_gpu_hours), null, t.idle_gpu_hours))),
  ];
}

function teamTable(rep) {
  if (!rep.teams.length) return h('p', { class: 'muted' }, 'No team spent anything in this period.');
  return table('Spend by team',
    [['Team'], ['Spend', 1], ['GPU-hours', 1], ['Lost work', 1], ['Lost GPU-hours', 1], ['Interruptions', 1]],
    rep.teams.map((t) => h('tr', {},
      h('th', { scope: 'row' }, t.team),
      num(`team.${t.team}.cost`, fmt.usd(t.cost_usd), t.cost_usd),
      num(`team.${t.team}.gpuHours`, gpuHours(t.gpu_hours), t.gpu_hours),
      num(`team.${t.team}.lostCost`, fmt.usd(t.lost_cost_usd), t.lost_cost_usd),
      num(`team.${t.team}.lostGpuHours`, gpuHours(t.lost_gpu_hours), t.lost_gpu_hours),
      num(`team.${t.team}.interruptions`, fmt.count(t.interruptions), t.interruptions))));
}

function poolTable(rep) {
  if (!rep.pools.length) return h('p', { class: 'muted' }, 'No pool billed anything in this period.');
  return table('Spend by pool',
    [['Pool'], ['Spend', 1], ['GPU-hours billed', 1], ['Idle', 1], ['Lost work', 1]],
    rep.pools.map((p) => h('tr', {},
      h('th', { scope: 'row' }, p.pool),
      num(`pool.${p.pool}.cost`, fmt.usd(p.cost_usd), p.cost_usd),
      num(`pool.${p.pool}.gpuHours`, gpuHours(p.gpu_hours), p.gpu_hours),
      num(`pool.${p.pool}.idleCost`, fmt.usd(p.idle_cost_usd), p.idle_cost_usd),
      num(`pool.${p.pool}.lostCost`, fmt.usd(p.lost_cost_usd), p.lost_cost_usd))));
}

function jobTable(rep) {
  const top = [...rep.jobs].sort((a, b) => b.cost_usd - a.cost_usd).slice(0, TOP_JOBS);
  if (!top.length) return h('p', { class: 'muted' }, 'No job ran in this period.');
  return table('Jobs that spent most',
    [['Job'], ['Team'], ['Spend', 1], ['GPU-hours', 1], ['Lost work', 1], ['Interruptions', 1]],
    top.map((j) => h('tr', {},
      h('th', { scope: 'row' }, h('a', { href: `#/jobs/${j.job}` }, j.name ? `${j.name} (#${j.job})` : `#${j.job}`)),
      h('td', {}, j.team),
      num(`job.${j.job}.cost`, fmt.usd(j.cost_usd), j.cost_usd),
      num(`job.${j.job}.gpuHours`, gpuHours(j.gpu_hours), j.gpu_hours),
      num(`job.${j.job}.lostCost`, fmt.usd(j.lost_cost_usd), j.lost_cost_usd),
      num(`job.${j.job}.interruptions`, fmt.count(j.interruptions), j.interruptions))));
}

// One chart per section, rebuilt when its series (teams, pools) change.
class SeriesChart {
  constructor(box) {
    this.box = box;
    this.chart = null;
    this.key = '';
  }

  show(times, rows) {
    const key = rows.map((r) => r.label).join('\u0000');
    if (!rows.length) {
      this.destroy();
      replace(this.box, h('p', { class: 'muted' }, 'Nothing to chart in this period.'));
      return;
    }
    if (key !== this.key || !this.chart) {
      this.destroy();
      replace(this.box);
      this.chart = lineChart(this.box, { series: rows.map((r) => ({ label: r.label, unit: 'USD' })), height: 220,
        ySpan: 0.0001 });
      this.key = key;
    }
    this.chart.setData([times, ...rows.map((r) => r.values)]);
  }

  destroy() {
    if (this.chart) this.chart.destroy();
    this.chart = null;
    this.key = '';
  }
}

// The CSV of the report shown: fetched with the token (a plain link could not send it), saved
// through a temporary object URL.
async function downloadCsv(query, name) {
  const headers = { Accept: 'text/csv' };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(`/api/v1/cost?${query}&format=csv`, { headers, cache: 'no-store' });
  if (!res.ok) throw new Error(`the CSV download failed: HTTP ${res.status} ${await res.text()}`);
  const url = URL.createObjectURL(new Blob([await res.text()], { type: 'text/csv' }));
  const a = h('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function render(root, params) {
  const period = PERIODS.find((p) => p.key === params.query?.get('period')) || PERIODS[1];
  let shown = null; // {since, until} of the report shown
  const csvButton = h('button', { type: 'button', disabled: true }, 'Download CSV');
  const periodNav = h('nav', { class: 'period', 'aria-label': 'Period' },
    PERIODS.map((p) => h('a', { href: `#/cost?period=${p.key}`,
      'aria-current': p === period ? 'true' : null }, p.label)));
  const cards = h('div', { class: 'cards', 'aria-busy': 'true' }, h('p', { class: 'muted' }, 'Loading…'));
  const teamChartBox = h('div', { class: 'chart' });
  const poolChartBox = h('div', { class: 'chart' });
  const teamBox = h('div', {});
  const poolBox = h('div', {});
  const jobBox = h('div', {});
  const poolSection = h('section', { class: 'card wide', 'aria-labelledby': 'cost-pools' },
    h('h2', { id: 'cost-pools' }, 'Spend by pool'), poolChartBox, poolBox);
  root.append(h('h1', {}, 'Cost'),
    h('div', { class: 'toolbar' }, periodNav, csvButton),
    cards,
    h('section', { class: 'card wide', 'aria-labelledby': 'cost-teams' },
      h('h2', { id: 'cost-teams' }, 'Spend by team'), teamChartBox, teamBox),
    poolSection,
    h('section', { class: 'card wide', 'aria-labelledby': 'cost-jobs' },
      h('h2', { id: 'cost-jobs' }, 'Jobs that spent most'), jobBox));
  const teamChart = new SeriesChart(teamChartBox);
  const poolChart = new SeriesChart(poolChartBox);

  csvButton.addEventListener('click', async () => {
    if (!shown) return;
    try {
      const q = new URLSearchParams(shown).toString();
      await downloadCsv(q, `trainyard-cost-${period.key}.csv`);
    } catch (e) {
      showError(e);
    }
  });

  const stop = poll(async () => {
    const series = await api(`/api/v1/cost/series?since=${encodeURIComponent(period.since())}&step=${period.step}`);
    // The report and the CSV cover exactly the series' window, in whole seconds, so the CSV
    // fetched later has the numbers shown.
    const q = new URLSearchParams({ since: series.since, until: series.until });
    const rep = await api(`/api/v1/cost?${q}`);
    shown = { since: rep.since, until: rep.until };
    cards.dataset.since = rep.since;
    cards.dataset.until = rep.until;
    csvButton.disabled = false;
    replace(cards, totalsCards(rep));
    cards.removeAttribute('aria-busy');
    replace(teamBox, teamTable(rep));
    replace(jobBox, jobTable(rep));
    const times = series.times;
    teamChart.show(times, series.teams.map((t) => ({ label: t.team, values: t.cost_usd })));
    poolSection.hidden = rep.scope === 'team';
    if (rep.scope !== 'team') {
      replace(poolBox, poolTable(rep));
      poolChart.show(times, [...series.pools.map((p) => ({ label: p.pool, values: p.cost_usd })),
        { label: 'idle (all pools)', values: series.idle_cost_usd },
        { label: 'lost work', values: series.lost_cost_usd }]);
    }
  }, REFRESH_MS);
  return () => {
    stop();
    teamChart.destroy();
    poolChart.destroy();
  };
}
