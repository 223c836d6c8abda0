// The simulator's HTML report (`trainyard simulate --html FILE`): one self-contained page that
// the CLI writes with this bundle, its CSS and the run's data (JSON in #report-data) inlined. It
// draws the comparison table (the cells of the text table), the JCT CDF, GPU allocation and
// queue length over time per policy, and the cost scenarios when the run has them, with the same
// chart code as the web UI. It makes no request of any kind.
import './style.css';
import './report.css';
import { lineChart } from './chart.js';
import { h } from './dom.js';

const data = JSON.parse(document.getElementById('report-data').textContent);
const root = document.getElementById('report');

function table(id, caption, cells) {
  const [head, ...rows] = cells;
  return h('div', { class: 'scroll-x' }, h('table', { id, 'aria-label': caption },
    h('thead', {}, h('tr', {}, head.map((c, i) => h('th', { scope: 'col', class: i ? 'num' : null }, c)))),
    h('tbody', {}, rows.map((row) => h('tr', { 'data-row': row[0] },
      row.map((c, i) => (i === 0 ? h('th', { scope: 'row' }, c)
        : h('td', { class: 'num', 'data-col': head[i] }, c))))))));
}

function section(id, title, ...body) {
  return h('section', { class: 'card wide', 'aria-labelledby': id }, h('h2', { id }, title), ...body);
}

// A chart drawn once the section is in the page (uPlot sizes itself to its box).
const charts = [];
function chart(opts, columns) {
  const box = h('div', { class: 'chart' });
  charts.push(() => lineChart(box, opts).setData(columns));
  return box;
}

const run = data.run;
root.replaceChildren(
  h('h1', {}, 'Simulation report'),
  h('p', {}, `Trace ${run.trace} (${run.jobs.toLocaleString()} jobs`,
    run.skipped_rows ? `, ${run.skipped_rows} bad rows skipped` : '',
    `) on cluster ${run.cluster} (${run.cluster_gpus.toLocaleString()} GPUs), seed ${run.seed}.`),
);

if (data.cost) {
  const t = data.cost.timeline;
  root.append(
    section('r-cost', 'Cost scenarios', table('cost-table', 'Cost scenarios', data.cost.table),
      h('h3', {}, 'Money spent over time'),
      chart({ x: { label: 'time (hours)', unit: 'h' }, series: t.scenarios.map((s) => ({ label: s.scenario, unit: 'USD' })) },
        [t.hours, ...t.scenarios.map((s) => s.cost_usd)]),
      h('h3', {}, 'Nodes up over time'),
      chart({ x: { label: 'time (hours)', unit: 'h' }, series: t.scenarios.map((s) => ({ label: s.scenario, unit: 'nodes' })) },
        [t.hours, ...t.scenarios.map((s) => s.nodes)])));
}

if (data.table.length) {
  const { cdf, timeline } = data;
  root.append(
    section('r-table', data.cost ? 'Scenarios side by side' : 'Policies side by side',
      table('policy-table', 'Policies side by side', data.table),
      h('p', { class: 'muted' }, `Ratios are to ${data.table[1][0]}. JCT: job completion time `
        + '(submit to finish); rho: finish-time fairness; Jain: fairness over teams.')),
    section('r-cdf', 'Job completion time (CDF)',
      chart({ x: { label: 'JCT (hours, log scale)', unit: 'h', log: true }, yMax: 1,
        series: cdf.policies.map((p) => ({ label: p.policy, unit: 'of jobs' })) },
      [cdf.jct_hours, ...cdf.policies.map((p) => p.fraction)])),
    section('r-alloc', 'GPUs allocated over time',
      chart({ x: { label: 'time (hours)', unit: 'h' },
        series: timeline.policies.map((p) => ({ label: p.policy, unit: 'GPUs' })) },
      [timeline.hours, ...timeline.policies.map((p) => p.allocated_gpus)])),
    section('r-queue', 'Jobs waiting over time',
      chart({ x: { label: 'time (hours)', unit: 'h' },
        series: timeline.policies.map((p) => ({ label: p.policy, unit: 'jobs' })) },
      [timeline.hours, ...timeline.policies.map((p) => p.pending)])));
}

for (const draw of charts) draw();
document.body.dataset.ready = 'true';
