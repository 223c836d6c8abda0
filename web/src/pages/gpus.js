// The GPUs page: one tile per GPU as nvitop draws them (utilization and memory bars,
// temperature, power, the jobs on it, an "allocated but idle" mark), MIG instances inside their
// GPU's tile, then the nodes with pool, zone, state, price and use. Live: polls
// GET /api/v1/gpus, GET /api/v1/nodes and GET /api/v1/summary (for the idle threshold).
import { api, poll } from '../api.js';
import { h, replace } from '../dom.js';
import * as fmt from '../format.js';
import './gpus.css';

const MIG_SLICES = 7; // compute slices of a MIG-capable GPU

function num(x, digits = 0) {
  return x === null || x === undefined ? null : Number(x).toFixed(digits);
}

// A horizontal bar like nvitop's: `ratio` 0..1 (null: not reported), text beside it.
function bar(label, ratio, text, field, level) {
  const fill = h('span', { class: `fill ${level || ''}` });
  fill.style.width = `${Math.round(Math.max(0, Math.min(1, ratio ?? 0)) * 100)}%`;
  return h('div', { class: 'bar-row' },
    h('span', { class: 'bar-label' }, label),
    h('span', {
      class: 'bar', role: 'meter', 'aria-label': label, 'aria-valuemin': 0, 'aria-valuemax': 100,
      'aria-valuenow': ratio === null || ratio === undefined ? null : Math.round(ratio * 100),
      'aria-valuetext': text,
    }, fill),
    h('span', { class: 'bar-text', 'data-field': field }, text));
}

function level(ratio) {
  if (ratio === null || ratio === undefined) return '';
  return ratio >= 0.9 ? 'high' : ratio >= 0.5 ? 'mid' : '';
}

function jobLinks(jobs) {
  if (!jobs.length) return h('span', { class: 'muted' }, 'no job');
  return jobs.map((j, i) => [i ? ', ' : '',
    h('a', { href: `#/jobs/${j.id}` }, `job ${j.id}`),
    j.name ? ` (${j.name}${j.team ? `, ${j.team}` : ''})` : (j.team ? ` (${j.team})` : '')]);
}

// The MIG instances of a GPU: slices 0..6 as a strip, each instance a segment with its job.
function migStrip(shares, jobsById) {
  const mig = shares.filter((s) => s.migProfile);
  if (!mig.length) return h('p', { class: 'muted mig-none' }, 'MIG on: no instance in use');
  const strip = h('div', { class: 'mig-strip', role: 'list', 'aria-label': 'MIG instances' });
  const sorted = [...mig].sort((a, b) => a.migStart - b.migStart);
  for (const s of sorted) {
    const seg = h('div', { class: 'mig-seg', role: 'listitem', 'data-field': `mig.${s.job}.${s.migStart}` },
      h('span', { class: 'mig-profile' }, s.migProfile),
      ' ', h('a', { href: `#/jobs/${s.job}` }, `job ${s.job}`),
      jobsById[s.job]?.name ? ` ${jobsById[s.job].name}` : '');
    seg.style.flexGrow = String(s.computeSlices);
    strip.append(seg);
  }
  const used = mig.reduce((n, s) => n + s.computeSlices, 0);
  if (used < MIG_SLICES) {
    const free = h('div', { class: 'mig-seg free', role: 'listitem' }, `${MIG_SLICES - used} of 7 slices free`);
    free.style.flexGrow = String(MIG_SLICES - used);
    strip.append(free);
  }
  return strip;
}

function tile(g, device, migDevices, idleBelow) {
  const key = g.uuid;
  const util = g.gpuUtilPercent;
  const memRatio = g.memoryTotalBytes ? g.memoryUsedBytes / g.memoryTotalBytes : null;
  const idle = g.jobs.length > 0 && util !== null && util < idleBelow;
  const jobsById = Object.fromEntries(g.jobs.map((j) => [j.id, j]));
  // Jobs placed since the sample was taken are on the node's device already.
  const jobs = [...g.jobs, ...(device?.jobs || []).filter((id) => !jobsById[id]).map((id) => ({ id }))];
  const migOn = device?.mig || g.mig || migDevices.length > 0;
  const title = `GPU ${g.index} · ${g.model || g.name}`;
  return h('article', { class: `gpu-tile${idle ? ' idle' : ''}${g.jobs.length ? ' busy' : ''}`,
    'aria-label': title, 'data-uuid': key, 'data-time': g.time },
  h('h3', {}, title, migOn ? h('span', { class: 'tag' }, 'MIG') : null,
    idle ? h('span', { class: 'tag idle-tag', 'data-field': `${key}.idle` }, 'allocated but idle') : null),
  bar('GPU', util === null ? null : util / 100, util === null ? 'not reported' : `${num(util)} %`,
    `${key}.util`, level(util === null ? null : util / 100)),
  bar('MEM', memRatio, `${fmt.bytes(g.memoryUsedBytes)} / ${fmt.bytes(g.memoryTotalBytes)}`,
    `${key}.mem`, level(memRatio)),
  h('p', { class: 'gpu-stats' },
    h('span', { title: 'temperature' }, h('span', { class: 'gq-sr' }, 'Temperature '),
      h('span', { 'data-field': `${key}.temp` }, g.temperatureC === null ? '—' : `${num(g.temperatureC)} °C`)),
    h('span', { title: 'power draw / limit' }, h('span', { class: 'gq-sr' }, 'Power '),
      h('span', { 'data-field': `${key}.power` },
        g.powerW === null ? '—' : `${num(g.powerW)} W${g.powerLimitW ? ` / ${num(g.powerLimitW)} W` : ''}`))),
  h('p', { class: 'gpu-jobs', 'data-field': `${key}.jobs` }, jobLinks(jobs)),
  migOn ? migStrip(device?.shares || [], jobsById) : null,
  migDevices.length ? h('ul', { class: 'mig-devices' }, migDevices.map((m) => h('li', {},
    `${m.migProfile}: ${num(m.gpuUtilPercent) ?? '—'} % · ${fmt.bytes(m.memoryUsedBytes)} / ${fmt.bytes(m.memoryTotalBytes)} · `,
    jobLinks(m.jobs)))) : null,
  h('p', { class: 'hint' }, 'Sampled ', fmt.time(g.time)));
}

function nodesTable(nodes) {
  return h('div', { class: 'scroll-x' }, h('table', { class: 'nodes' },
    h('caption', { class: 'gq-sr' }, 'Nodes'),
    h('thead', {}, h('tr', {}, ['Node', 'Pool', 'Zone', 'State', 'GPU model', 'GPUs in use', 'Price',
      'CPUs', 'Memory'].map((c, i) => h('th', { scope: 'col', class: i >= 5 ? 'num' : null }, c)))),
    h('tbody', {}, nodes.map((n) => h('tr', { 'data-node': n.name },
      h('th', { scope: 'row' }, n.name, n.simulated ? h('span', { class: 'hint' }, ' (simulated)') : null),
      h('td', { 'data-field': `node.${n.name}.pool` }, n.pool || '—'),
      h('td', { 'data-field': `node.${n.name}.zone` }, n.zone || '—'),
      h('td', { 'data-field': `node.${n.name}.state` }, h('span', { class: `node-state ns-${n.state}` }, n.state)),
      h('td', { 'data-field': `node.${n.name}.model` }, n.gpuModel || 'no GPU'),
      h('td', { class: 'num', 'data-field': `node.${n.name}.use` }, `${fmt.count(n.gpusInUse)} of ${fmt.gpus(n.gpus)}`),
      h('td', { class: 'num', 'data-field': `node.${n.name}.price` }, `${fmt.usd(n.pricePerHour)}/h`),
      h('td', { class: 'num' }, fmt.count((n.cpuMilli || 0) / 1000)),
      h('td', { class: 'num' }, fmt.bytes(n.memoryBytes)))))));
}

export function render(root) {
  const head = h('p', { class: 'lead', 'aria-live': 'off' }, h('span', { class: 'muted' }, 'Loading…'));
  const tiles = h('div', { class: 'gpu-tiles', 'aria-busy': 'true' });
  const nodesBox = h('div', {});
  root.append(h('h1', {}, 'GPUs and nodes'), head,
    h('section', { 'aria-labelledby': 'gpus-tiles' }, h('h2', { id: 'gpus-tiles' }, 'GPUs'), tiles),
    h('section', { 'aria-labelledby': 'gpus-nodes', class: 'nodes-section' },
      h('h2', { id: 'gpus-nodes' }, 'Nodes'), nodesBox));

  const stop = poll(async () => {
    const [gpus, nodes, summary] = await Promise.all([api('/api/v1/gpus'), api('/api/v1/nodes'),
      api('/api/v1/summary')]);
    const idleBelow = summary.gpus.idleBelowPercent;
    const devices = {};
    for (const n of nodes.items) for (const d of n.devices) devices[d.uuid] = d;
    const parents = gpus.items.filter((g) => !g.migProfile);
    const migItems = gpus.items.filter((g) => g.migProfile);
    const focused = root.contains(document.activeElement) && document.activeElement.getAttribute('href');
    replace(head,
      h('span', { 'data-field': 'gpus.total' }, fmt.gpus(summary.gpus.total)), ': ',
      h('span', { 'data-field': 'gpus.inUse' }, fmt.count(summary.gpus.inUse)), ' in use, ',
      h('span', { 'data-field': 'gpus.free' }, fmt.count(summary.gpus.free)), ' free, ',
      h('span', { 'data-field': 'gpus.idleAllocated' }, fmt.count(summary.gpus.idleAllocated)),
      ` allocated but idle (below ${idleBelow} % utilization). Every ${gpus.intervalSeconds} s a sample.`);
    replace(tiles, parents.length ? parents.map((g) => tile(g, devices[g.uuid],
      migItems.filter((m) => m.index === g.index), idleBelow))
      : h('p', { class: 'muted' }, 'No GPU samples yet (a server without GPUs, or one that has just started).'));
    tiles.removeAttribute('aria-busy');
    replace(nodesBox, nodesTable(nodes.items));
    if (focused) root.querySelector(`a[href="${focused}"]`)?.focus();
  });
  return stop;
}
