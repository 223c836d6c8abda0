// How the UI writes values: times in the reader's time zone with the UTC time on hover, and
// numbers with their units. Every page formats through here so the whole UI reads alike.
import { h } from './dom.js';

const timeFormat = new Intl.DateTimeFormat(undefined, {
  year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit',
});
const numberFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

// A <time> element for an ISO 8601 time from the API: local time shown, UTC in the title.
// null/"" (never happened) gives "—".
export function time(iso) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return h('span', {}, String(iso));
  return h('time', { datetime: d.toISOString(), title: utcText(d) }, timeFormat.format(d));
}

export function utcText(d) {
  return `${d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, '').replace(/Z$/, '')} UTC`;
}

// Seconds as "45 s", "3 min 20 s", "2 h 5 min", "3 d 4 h"; null gives "—".
export function duration(seconds) {
  if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return '—';
  let s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const d = Math.floor(s / 86400);
  s -= d * 86400;
  const hrs = Math.floor(s / 3600);
  s -= hrs * 3600;
  const min = Math.floor(s / 60);
  s -= min * 60;
  if (d > 0) return hrs ? `${d} d ${hrs} h` : `${d} d`;
  if (hrs > 0) return min ? `${hrs} h ${min} min` : `${hrs} h`;
  return s ? `${min} min ${s} s` : `${min} min`;
}

// Bytes in binary units, as nvidia-smi and the CLI write them: "17.4 GiB".
export function bytes(n) {
  if (n === null || n === undefined) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = Number(n);
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

// A count of GPUs (fractions and MIG shares allowed): "1 GPU", "2.5 GPUs".
export function gpus(n) {
  const v = Number(n || 0);
  return `${numberFormat.format(v)} ${v === 1 ? 'GPU' : 'GPUs'}`;
}

// US dollars: cents for sums of a dollar or more, four significant digits below.
export function usd(x) {
  if (x === null || x === undefined) return '—';
  const v = Number(x);
  if (Math.abs(v) >= 1 || v === 0) {
    return v.toLocaleString(undefined, { style: 'currency', currency: 'USD' });
  }
  return `$${v.toPrecision(3)}`;
}

export function percent(x) {
  return x === null || x === undefined ? '—' : `${numberFormat.format(x)} %`;
}

export function count(n) {
  return Number(n || 0).toLocaleString();
}

// "1 job", "3 jobs".
export function plural(n, word) {
  return `${count(n)} ${word}${Number(n) === 1 ? '' : 's'}`;
}
