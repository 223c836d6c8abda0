// One job (#/jobs/ID): what it is and where it stands (state, team, attempts, the state
// timeline from its events), why it waits (the scheduler's reason and estimated start), where it
// runs (placement, kept for ended jobs), its output (logs per attempt and rank, followed while
// it runs), its GPUs over its life (per-minute telemetry), its step metrics (loss, throughput,
// data wait), the doctor's findings, checkpoints and cost; and the actions on it (cancel with a
// confirm step, hold and release a pending job). Live while the job has not ended.
// Reads GET /api/v1/jobs/{id} and its /events, /logs, /telemetry, /metrics, /doctor,
// /checkpoints, and GET /api/v1/cost.
import { api, poll, showError } from '../api.js';
import { lineChart } from '../chart.js';
import { h, replace } from '../dom.js';
import * as fmt from '../format.js';
import { getToken } from '../token.js';
import './job.css';

const ENDED = new Set(['succeeded', 'failed', 'cancelled']);
const LOG_TAIL_LINES = 500;
const LOG_MAX_CHARS = 400_000; // what the page keeps of a followed log
const LOG_FOLLOW_MS = 2000;
const SLOW_MS = 30_000; // doctor, checkpoints and cost while the job runs
const GIB = 1024 ** 3;

function section(title, id, ...body) {
  return h('section', { class: 'card wide', 'aria-labelledby': id }, h('h2', { id }, title), ...body);
}

function row(term, field, value) {
  return [h('dt', {}, term), h('dd', { 'data-field': field }, value)];
}

function stateBadge(state) {
  return h('span', { class: `state state-${state}`, 'data-field': 'state' }, state);
}

function table(headers, rows, { caption = null, field = null } = {}) {
  return h('div', { class: 'scroll-x' }, h('table', { 'data-table': field },
    caption ? h('caption', { class: 'sr-only' }, caption) : null,
    h('thead', {}, h('tr', {}, headers.map(([label, cls]) => h('th', { scope: 'col', class: cls }, label)))),
    h('tbody', {}, rows)));
}

function share(milli) {
  return milli >= 1000 ? fmt.gpus(milli / 1000) : `${milli / 10} % of a GPU`;
}

function placementTable(placement) {
  if (!placement || placement.length === 0) return h('p', { class: 'muted' }, 'Not placed.');
  return table([['Rank', 'num'], ['Node'], ['GPU', 'num'], ['Share'], ['Device']],
    placement.map((p) => h('tr', {},
      h('td', { class: 'num' }, String(p.worker)), h('td', {}, p.node),
      h('td', { class: 'num' }, p.gpu < 0 ? '—' : String(p.gpu)),
      h('td', {}, p.gpu < 0 ? 'no GPU' : `${share(p.milli)}${p.mig_profile ? ` (MIG ${p.mig_profile})` : ''}`),
      h('td', { class: 'mono' }, p.device || '—'))), { caption: 'Placement', field: 'placement' });
}

function placementSummary(placement) {
  if (!placement || placement.length === 0) return '—';
  const byNode = new Map();
  for (const p of placement) {
    if (!byNode.has(p.node)) byNode.set(p.node, []);
    if (p.gpu >= 0) byNode.get(p.node).push(p.gpu);
  }
  return [...byNode].map(([node, g]) => (g.length ? `${node} GPUs ${g.join(',')}` : node)).join('; ');
}

function attemptsTable(attempts) {
  if (!attempts || attempts.length === 0) return h('p', { class: 'muted' }, 'No attempt has started yet.');
  return table([['Attempt', 'num'], ['Started'], ['Ended'], ['Ran', 'num'], ['Outcome'], ['Exit code', 'num'],
    ['Where']],
  attempts.map((a) => h('tr', { 'data-attempt': a.attempt },
    h('td', { class: 'num' }, String(a.attempt)), h('td', {}, fmt.time(a.started)),
    h('td', {}, fmt.time(a.ended)),
    h('td', { class: 'num' }, fmt.duration(((a.ended ? Date.parse(a.ended) : Date.now()) - Date.parse(a.started)) / 1000)),
    h('td', { 'data-field': `attempt.${a.attempt}.outcome` }, a.outcome || 'running'),
    h('td', { class: 'num' }, a.outcome ? String(a.exitCode) : '—'),
    h('td', {}, placementSummary(a.placement)))), { caption: 'Attempts', field: 'attempts' });
}

// The state timeline: one coloured segment per state, as long as the job stayed in it, then the
// events as a table.
function timeline(events, job) {
  const spans = [];
  const transitions = events.filter((e) => e.type === 'Submitted' || e.type === 'Transition');
  const end = job.finished ? Date.parse(job.finished) : Date.now();
  transitions.forEach((e, i) => {
    const from = Date.parse(e.time);
    const to = i + 1 < transitions.length ? Date.parse(transitions[i + 1].time) : end;
    spans.push({ state: e.to, from, to });
  });
  const total = Math.max(1, end - (spans[0]?.from ?? end));
  const bar = h('div', { class: 'timeline', role: 'img',
    'aria-label': `State timeline: ${spans.map((s) => `${s.state} ${fmt.duration((s.to - s.from) / 1000)}`).join(', ')}` },
  spans.map((s) => {
    const seg = h('span', { class: `seg state-${s.state}`,
      title: `${s.state}: ${fmt.duration((s.to - s.from) / 1000)} from ${fmt.utcText(new Date(s.from))}` });
    // Through the CSSOM: the CSP forbids style attributes.
    seg.style.flexGrow = String(Math.max(s.to - s.from, total / 200));
    return seg;
  }));
  const legend = h('ul', { class: 'legend' }, [...new Set(spans.map((s) => s.state))].map((s) =>
    h('li', {}, h('span', { class: `swatch state-${s}` }), s)));
  const rows = events.map((e) => h('tr', {},
    h('td', {}, fmt.time(e.time)), h('td', {}, e.type),
    h('td', {}, e.from ? `${e.from} → ${e.to}` : e.to), h('td', { class: 'num' }, String(e.attempt)),
    h('td', {}, e.reason)));
  return [bar, legend, h('details', { open: events.length <= 12 },
    h('summary', {}, `${fmt.plural(events.length, 'event')}`),
    table([['Time'], ['Event'], ['State'], ['Attempt', 'num'], ['Reason']], rows,
      { caption: 'Events', field: 'events' }))];
}

function waitingCard(job) {
  if (job.state !== 'pending') return null;
  return section('Why it waits', 'job-waiting',
    h('p', { 'data-field': 'waiting' }, job.waiting || '—'),
    h('dl', {},
      row('Held', 'held', job.held ? 'yes (release it to let it start)' : 'no'),
      row('Expected start', 'estimatedStart', job.estimatedStart ? fmt.time(job.estimatedStart)
        : (job.estimatedStartBasis ? 'unknown' : '—')),
      row('How that was found', 'estimatedStartBasis', job.estimatedStartBasis || '—')),
    job.estimatedStartReason ? h('p', { class: 'muted', 'data-field': 'estimatedStartReason' }, job.estimatedStartReason) : null);
}

function doctorCard(d) {
  if (!d) return h('p', { class: 'muted' }, 'Loading…');
  const items = d.findings.map((f) => h('li', { class: `finding sev-${f.severity === 'warning' ? 'warning' : 'info'}`, 'data-rule': f.rule },
    h('p', {}, h('span', { class: 'badge' }, f.severity), ' ', h('strong', {}, f.rule), ': ', f.summary),
    f.evidence.length ? h('ul', { class: 'evidence' }, f.evidence.map((e) => h('li', {}, e))) : null,
    h('p', { class: 'fix' }, h('strong', {}, 'Suggested fix: '), f.action),
    f.sdk ? h('p', { class: 'fix' }, h('strong', {}, 'With trainyard: '), h('code', { 'data-field': 'sdk' }, f.sdk)) : null));
  return [h('p', { 'data-field': 'doctor.verdict' }, d.verdict),
    items.length ? h('ul', { class: 'findings' }, items) : null,
    (d.notes || []).map((n) => h('p', { class: 'muted' }, n))];
}

function checkpointsCard(c) {
  if (!c) return h('p', { class: 'muted' }, 'Loading…');
  if (!c.items.length) return h('p', { class: 'muted' }, `No checkpoints in ${c.dir || 'the checkpoint directory'}.`);
  return [h('p', { class: 'muted' }, 'In ', h('code', {}, c.dir)),
    table([['Step', 'num'], ['Written'], ['Size', 'num'], ['Verified'], ['Path']],
      c.items.map((i) => h('tr', {},
        h('td', { class: 'num' }, String(i.step)), h('td', {}, fmt.time(i.created)),
        h('td', { class: 'num' }, fmt.bytes(i.bytes)),
        h('td', {}, i.verified ? 'yes' : `no: ${i.problem || 'not verified'}`),
        h('td', { class: 'mono' }, i.path))), { caption: 'Checkpoints', field: 'checkpoints' })];
}

// Cost from the ledger's per-job rows since the job was submitted.
async function jobCost(job) {
  const since = new Date(Date.parse(job.submitted) - 60_000).toISOString().replace(/\.\d+Z$/, 'Z');
  const c = await api(`/api/v1/cost?since=${encodeURIComponent(since)}`);
  return (c.jobs || []).find((j) => String(j.job) === String(job.id)) || null;
}

// Per-device columns on a shared time axis: rows [{device, t, value}] -> [[t...], [dev0...], ...].
function columns(rows, devices) {
  const times = [...new Set(rows.map((r) => r.t))].sort((a, b) => a - b);
  const index = new Map(times.map((t, i) => [t, i]));
  const cols = devices.map(() => times.map(() => null));
  for (const r of rows) cols[devices.indexOf(r.device)][index.get(r.t)] = r.value;
  return [times, ...cols];
}

// The job's GPUs: per-minute rows over its life; raw samples when fewer than 5 minutes exist
// (a young job), so the chart has points to draw.
function gpuSeries(t) {
  const stored = t.minutes.filter((m) => !m.partial);
  const raw = stored.length < 5;
  const src = raw ? t.samples.map((s) => ({ device: s.device, t: Date.parse(s.time) / 1000,
    util: s.gpuUtilPercent, mem: s.memoryUsedBytes }))
    : t.minutes.map((m) => ({ device: m.device, t: Date.parse(m.minute) / 1000,
      util: m.gpuUtilAvg, mem: m.memoryUsedAvgBytes }));
  const devices = [...new Set(src.map((s) => s.device))];
  return {
    raw,
    devices,
    util: columns(src.map((s) => ({ device: s.device, t: s.t, value: s.util })), devices),
    mem: columns(src.map((s) => ({ device: s.device, t: s.t, value: s.mem == null ? null : s.mem / GIB })), devices),
  };
}

// "vm GPU 2" for a device the job was placed on (any attempt), else its UUID.
function deviceName(job, uuid) {
  for (const a of [...(job.attempts || []), { placement: job.placement }].reverse()) {
    const p = (a.placement || []).find((x) => x.device === uuid);
    if (p) return `${p.node} GPU ${p.gpu}${p.mig_profile ? ` ${p.mig_profile}` : ''}`;
  }
  return uuid;
}

// GET .../logs as text: the API's JSON helper does not fit a text/plain body.
async function fetchLog(path) {
  const headers = {};
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(path, { headers, cache: 'no-store' });
  const text = await res.text();
  if (!res.ok) {
    let message = text;
    try { message = JSON.parse(text).error.message; } catch { /* keep the text */ }
    throw Object.assign(new Error(message), { status: res.status });
  }
  return { text, next: Number(res.headers.get('X-Trainyard-Next-Offset') || 0),
    complete: res.headers.get('X-Trainyard-Complete') === 'true' };
}

function logView(id) {
  const attemptSel = h('select', { id: 'log-attempt' });
  const rankSel = h('select', { id: 'log-rank' });
  const follow = h('input', { type: 'checkbox', id: 'log-follow', checked: true });
  const status = h('span', { class: 'muted', id: 'log-status', role: 'status' });
  const pre = h('pre', { class: 'log', tabindex: '0', 'aria-label': 'Worker output', 'data-field': 'log' });
  const el = h('div', {},
    h('div', { class: 'toolbar' },
      h('label', { for: 'log-attempt' }, 'Attempt '), attemptSel,
      h('label', { for: 'log-rank' }, 'Rank '), rankSel,
      h('label', { class: 'check' }, follow, ' Follow'), status),
    pre);
  let offset = 0;
  let complete = false;
  let timer = null;
  let stopped = false;
  let generation = 0;
  let shown = { attempts: 0, workers: 0 };

  const schedule = () => {
    clearTimeout(timer);
    if (!stopped && follow.checked && !complete) timer = setTimeout(tick, LOG_FOLLOW_MS);
  };
  async function tick() {
    const gen = generation;
    const q = `attempt=${attemptSel.value}&rank=${rankSel.value}`;
    try {
      const r = await fetchLog(offset === 0 && pre.textContent === ''
        ? `/api/v1/jobs/${id}/logs?${q}&tailLines=${LOG_TAIL_LINES}`
        : `/api/v1/jobs/${id}/logs?${q}&offset=${offset}`);
      if (gen !== generation) return;
      const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
      if (r.text) {
        let text = pre.textContent + r.text;
        if (text.length > LOG_MAX_CHARS) text = text.slice(text.length - LOG_MAX_CHARS);
        pre.textContent = text;
        if (atBottom || follow.checked) pre.scrollTop = pre.scrollHeight;
      }
      offset = r.next;
      complete = r.complete;
      status.textContent = complete ? 'complete: the attempt has ended' : (follow.checked ? 'following' : '');
      follow.parentElement.hidden = complete;
      if (!pre.textContent) pre.textContent = complete ? '(no output)' : '';
    } catch (e) {
      status.textContent = `cannot read the log: ${e.message}`;
    }
    schedule();
  }
  const restart = () => {
    generation += 1;
    offset = 0;
    complete = false;
    pre.textContent = '';
    follow.parentElement.hidden = false;
    clearTimeout(timer);
    tick();
  };
  attemptSel.addEventListener('change', restart);
  rankSel.addEventListener('change', restart);
  follow.addEventListener('change', () => (follow.checked ? tick() : clearTimeout(timer)));
  return {
    el,
    // Fills the selectors from the job (new attempts appear; the current one is picked until the
    // reader picks another) and starts reading.
    update(job) {
      const attempts = Math.max(1, job.attempts?.length ? job.attempts[job.attempts.length - 1].attempt : job.attempt);
      if (attempts !== shown.attempts || job.workers !== shown.workers) {
        const pickedLatest = !shown.attempts || Number(attemptSel.value) === shown.attempts;
        const rank = rankSel.value || '0';
        replace(attemptSel, Array.from({ length: attempts }, (_, i) => h('option', { value: i + 1 }, `${i + 1}`)));
        replace(rankSel, Array.from({ length: job.workers }, (_, i) => h('option', { value: i }, `${i}`)));
        rankSel.value = Number(rank) < job.workers ? rank : '0';
        const first = !shown.attempts;
        if (pickedLatest) attemptSel.value = String(attempts);
        shown = { attempts, workers: job.workers };
        if (first || pickedLatest) restart();
      }
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

export function render(root, params) {
  const id = params.id;
  const title = h('h1', {}, `Job ${id}`);
  const actions = h('div', { class: 'buttons job-actions' });
  const confirmBox = h('div', { class: 'confirm', hidden: true, role: 'group', 'aria-labelledby': 'cancel-q' });
  const head = h('div', { class: 'cards job-head' });
  const waiting = h('div', {});
  const placeBox = h('div', {});
  const attemptsBox = h('div', {});
  const timelineBox = h('div', {});
  const doctorBox = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const ckptBox = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const gpuNote = h('p', { class: 'muted' });
  const utilBox = h('div', { class: 'chart', id: 'chart-gpu-util' });
  const memBox = h('div', { class: 'chart', id: 'chart-gpu-mem' });
  const metricsNote = h('p', { class: 'muted' });
  const lossBox = h('div', { class: 'chart', id: 'chart-loss' });
  const tputBox = h('div', { class: 'chart', id: 'chart-throughput' });
  const waitBox = h('div', { class: 'chart', id: 'chart-data-wait' });
  const metricCharts = h('div', { hidden: true }, h('h3', {}, 'Loss'), lossBox, h('h3', {}, 'Throughput'), tputBox,
    h('h3', {}, 'Waiting for data'), waitBox);
  const gpuCharts = h('div', { hidden: true }, h('h3', {}, 'Utilization'), utilBox, h('h3', {}, 'Memory used'), memBox);
  const logs = logView(id);
  const body = h('div', { class: 'job-body', hidden: true },
    head, waiting,
    section('State timeline', 'job-timeline', timelineBox),
    section('Attempts', 'job-attempts', attemptsBox),
    section('Placement', 'job-placement', placeBox),
    section('Logs', 'job-logs', logs.el),
    section('GPUs over the job’s life', 'job-gpus', gpuNote, gpuCharts),
    section('Training metrics', 'job-metrics', metricsNote, metricCharts),
    section('Doctor', 'job-doctor', doctorBox),
    section('Checkpoints', 'job-checkpoints', ckptBox));
  const denied = h('div', { class: 'denied', hidden: true, role: 'alert' });
  root.append(h('p', { class: 'crumbs' }, h('a', { href: '#/jobs' }, '← Jobs')), title, actions, confirmBox,
    denied, body);

  let charts = {};
  let job = null;
  let lastSlow = 0;
  let lastState = null;
  let lastActions = null;
  let events = [];
  let cost = null;

  const chartFor = (key, el, series, opts = {}) => {
    const names = series.map((s) => s.label).join('|');
    if (!charts[key] || charts[key].names !== names) {
      if (charts[key]) charts[key].chart.destroy();
      replace(el);
      charts[key] = { names, chart: lineChart(el, { series, height: 180, ...opts }) };
    }
    return charts[key].chart;
  };

  async function act(verb, label) {
    try {
      await api(`/api/v1/jobs/${id}/${verb}`, { method: 'POST', body: '{}' });
      document.getElementById('live').textContent = `${label} job ${id}`;
      confirmBox.hidden = true;
      refresh();
    } catch (e) {
      showError(e);
    }
  }

  function renderActions() {
    const ended = ENDED.has(job.state);
    const stopping = job.stopping === 'cancel';
    replace(actions,
      ended ? null : h('button', { type: 'button', id: 'cancel-job', class: 'danger', disabled: stopping,
        'aria-expanded': String(!confirmBox.hidden), onclick: () => {
          confirmBox.hidden = false;
          renderActions();
          document.getElementById('cancel-yes').focus();
        } }, stopping ? 'Cancelling…' : 'Cancel job…'),
      job.state === 'pending' && !job.held ? h('button', { type: 'button', id: 'hold-job', onclick: () => act('hold', 'Held') }, 'Hold') : null,
      job.state === 'pending' && job.held ? h('button', { type: 'button', id: 'release-job', onclick: () => act('release', 'Released') }, 'Release') : null);
    if (ended) confirmBox.hidden = true;
    if (!confirmBox.childElementCount) {
      replace(confirmBox,
        h('p', { id: 'cancel-q' }, `Cancel job ${id}? Running workers get the stop signal and have their grace period to save a checkpoint; this cannot be undone.`),
        h('div', { class: 'buttons' },
          h('button', { type: 'button', id: 'cancel-yes', class: 'danger', onclick: () => act('cancel', 'Cancelled') }, 'Yes, cancel the job'),
          h('button', { type: 'button', id: 'cancel-no', onclick: () => {
            confirmBox.hidden = true;
            renderActions();
            document.getElementById('cancel-job')?.focus();
          } }, 'Keep it')));
    }
  }

  function renderHead() {
    replace(title, `Job ${job.id}: `, h('span', { 'data-field': 'name' }, job.name), ' ', stateBadge(job.state));
    document.title = `Job ${job.id} ${job.name} · trainyard`;
    const ran = job.started ? ((job.finished ? Date.parse(job.finished) : Date.now()) - Date.parse(job.started)) / 1000 : null;
    replace(head,
      h('section', { class: 'card', 'aria-labelledby': 'job-about' }, h('h2', { id: 'job-about' }, 'Job'),
        h('dl', {},
          row('Team', 'team', job.team),
          row('State', 'stateText', job.stopping ? `${job.state} (stopping: ${job.stopping})` : job.state),
          row('Attempt', 'attempt', String(job.attempt)),
          row('Failures', 'failures', String(job.failures)),
          row('Priority', 'priority', `${job.spec?.spec?.priorityClass || ''} ${job.priority}`.trim()),
          row('Workers', 'workers', String(job.workers)),
          row('GPUs per worker', 'gpusPerWorker', String(job.resources?.['nvidia.com/gpu'] ??
            Object.entries(job.resources || {}).filter(([k]) => k.startsWith('nvidia.com/mig')).map(([k, v]) => `${v} × ${k.slice(15)}`).join(', ') ?? '0')))),
      h('section', { class: 'card', 'aria-labelledby': 'job-times' }, h('h2', { id: 'job-times' }, 'Times'),
        h('dl', {},
          row('Submitted', 'submitted', fmt.time(job.submitted)),
          row('Started', 'started', fmt.time(job.started)),
          row('Finished', 'finished', fmt.time(job.finished)),
          row(job.finished ? 'Last attempt ran' : 'Running for', 'ran', fmt.duration(ran)),
          job.progress ? row('Progress', 'progress', `step ${fmt.count(job.progress.step)}${job.progress.totalSteps ? ` of ${fmt.count(job.progress.totalSteps)}` : ''}`) : null,
          job.progress?.finishEstimate ? row('Expected finish', 'finishEstimate', fmt.time(job.progress.finishEstimate)) : null)),
      h('section', { class: 'card', 'aria-labelledby': 'job-where' }, h('h2', { id: 'job-where' }, 'Where and cost'),
        h('dl', {},
          row('Placement', 'placementSummary', placementSummary(job.placement)),
          row('Cost', 'cost', cost ? fmt.usd(cost.cost_usd) : '—'),
          row('GPU-hours', 'gpuHours', cost ? `${(+cost.gpu_hours).toFixed(3)} h` : '—'),
          cost && cost.lost_gpu_hours > 0 ? row('Lost to preemption', 'lost', `${(+cost.lost_gpu_hours).toFixed(3)} GPU-h (${fmt.usd(cost.lost_cost_usd)})`) : null),
        h('p', { class: 'muted', 'data-field': 'reason' }, job.reason)));
  }

  function renderGpus(t) {
    const s = gpuSeries(t);
    gpuNote.textContent = s.devices.length === 0 ? 'No GPU samples for this job (it has not held a GPU, or not yet).'
      : (s.raw ? `Recent samples every ${t.intervalSeconds} s of ${fmt.plural(s.devices.length, 'GPU')} (per-minute averages once there are five minutes)`
        : `Per-minute averages of ${fmt.plural(s.devices.length, 'GPU')} over the job's life`)
        + (t.summary?.gpuUtilAvg != null ? ` · average utilization ${fmt.percent(t.summary.gpuUtilAvg)}, peak memory ${fmt.bytes(t.summary.memoryUsedMaxBytes)}` : '');
    const names = s.devices.map((d) => deviceName(job, d));
    gpuCharts.hidden = !s.devices.length;
    if (!s.devices.length) return;
    chartFor('util', utilBox, names.map((label) => ({ label, unit: '%' })), { yMax: 100 }).setData(s.util);
    chartFor('mem', memBox, names.map((label) => ({ label, unit: 'GiB' }))).setData(s.mem);
  }

  function renderMetrics(m) {
    metricsNote.textContent = m.lines === 0
      ? 'The job reported no step metrics (the SDK\'s trainyard.report() writes them; see docs/job-contract.md).'
      : `${fmt.plural(m.lines, 'report')} of rank 0${m.points < m.lines ? `, shown as ${fmt.count(m.points)} averaged points` : ''}.`;
    for (const n of m.notes || []) metricsNote.append(h('br'), n);
    metricCharts.hidden = m.lines === 0;
    if (m.lines === 0) return;
    chartFor('loss', lossBox, [{ label: 'loss', unit: '' }]).setData([m.time, m.loss]);
    chartFor('tput', tputBox, [{ label: 'samples/s (rank 0)', unit: 'samples/s' }]).setData([m.time, m.samplesPerSecond]);
    chartFor('wait', waitBox, [{ label: 'share of step time waiting for data', unit: '%' }], { yMax: 100 })
      .setData([m.time, m.dataWaitPercent]);
  }

  async function slow() {
    const [d, c, k] = await Promise.allSettled([api(`/api/v1/jobs/${id}/doctor`),
      api(`/api/v1/jobs/${id}/checkpoints`), jobCost(job)]);
    if (d.status === 'fulfilled') replace(doctorBox, doctorCard(d.value));
    else replace(doctorBox, h('p', { class: 'muted' }, `The doctor could not run: ${d.reason.message}`));
    if (c.status === 'fulfilled') replace(ckptBox, checkpointsCard(c.value));
    else replace(ckptBox, h('p', { class: 'muted' }, `Cannot list checkpoints: ${c.reason.message}`));
    if (k.status === 'fulfilled') cost = k.value;
  }

  async function tick() {
    try {
      job = await api(`/api/v1/jobs/${id}`);
    } catch (e) {
      if (e.status === 403 || e.status === 404) {
        body.hidden = true;
        replace(actions);
        replace(title, `Job ${id}`);
        replace(denied, h('p', {}, h('strong', {}, e.status === 403 ? 'You may not see this job. ' : 'No such job. '),
          e.message), e.status === 403 ? h('p', {}, 'A team token sees only its own team\'s jobs; use the Token button to switch tokens.') : null);
        denied.hidden = false;
        stopAll();
        return;
      }
      throw e;
    }
    denied.hidden = true;
    body.hidden = false;
    // Events only grow: ask for those after the last one seen.
    const ev = await api(`/api/v1/jobs/${id}/events?after=${events.length ? events[events.length - 1].seq : 0}`);
    events = events.concat(ev.items);
    const ended = ENDED.has(job.state);
    const first = lastState === null;
    const changed = job.state !== lastState;
    lastState = job.state;
    renderHead();
    // Rebuilt only when they change, so a keyboard user's focus on a button survives a refresh.
    const actionKey = `${job.state}/${job.held}/${job.stopping}`;
    if (actionKey !== lastActions) {
      lastActions = actionKey;
      renderActions();
    }
    replace(waiting, waitingCard(job));
    const open = timelineBox.querySelector('details')?.open;
    replace(timelineBox, timeline(events, job));
    if (open !== undefined) timelineBox.querySelector('details').open = open;
    replace(attemptsBox, attemptsTable(job.attempts));
    replace(placeBox, placementTable(job.placement),
      ENDED.has(job.state) && job.placement?.length ? h('p', { class: 'muted' }, 'Where its last attempt ran.') : null);
    logs.update(job);
    if (first || changed || !ended) {
      const [t, m] = await Promise.allSettled([api(`/api/v1/jobs/${id}/telemetry`), api(`/api/v1/jobs/${id}/metrics`)]);
      if (t.status === 'fulfilled') renderGpus(t.value);
      else gpuNote.textContent = `Cannot read the job's telemetry: ${t.reason.message}`;
      if (m.status === 'fulfilled') renderMetrics(m.value);
      else metricsNote.textContent = `Cannot read the job's step metrics: ${m.reason.message}`;
    }
    // The doctor, checkpoints (hashing every file) and cost: after the rest is on screen, at
    // the start, on a change of state and every SLOW_MS while the job has not ended.
    if (first || changed || (!ended && Date.now() - lastSlow > SLOW_MS)) {
      lastSlow = Date.now();
      await slow();
      renderHead();
    }
  }

  let stopPoll = null;
  const refresh = () => tick().catch(showError);
  function stopAll() {
    if (stopPoll) stopPoll();
    logs.stop();
  }
  stopPoll = poll(tick);
  return () => {
    stopAll();
    for (const c of Object.values(charts)) c.chart.destroy();
    charts = {};
  };
}
