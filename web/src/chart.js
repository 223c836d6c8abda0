// Time-series charts for every page (and the simulator's report): a thin layer over uPlot that
// sizes the chart to its container, labels axes with units and keeps colours consistent.
// lineChart(el, {series: [{label, unit}], height}) -> {setData([[unixSeconds...], [y...], ...]),
// destroy()}. `x: {label, unit, log}` makes x a plain number axis (hours, a JCT) instead of time;
// `ySpan` is the least height of the y axis (default 1).
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

// Distinguishable for colour-blind readers (Okabe-Ito), dark enough on white.
export const COLORS = ['#0072b2', '#d55e00', '#009e73', '#cc79a7', '#e69f00', '#56b4e9', '#000000'];

export function lineChart(el, { series, height = 220, yMin = 0, yMax = null, title = null, x = null,
  ySpan = 1 }) {
  const unit = series[0]?.unit || '';
  // uPlot passes null for the ticks a log axis leaves unlabelled.
  const num = (v) => (v == null ? '' : `${+Number(v).toPrecision(3)}`);
  // Two decimals, or three significant digits below 1 (small sums of money).
  const yNum = (v) => `${Math.abs(v) >= 1 || v === 0 ? +v.toFixed(2) : +v.toPrecision(3)}`;
  const opts = {
    width: Math.max(200, el.clientWidth || 600),
    height,
    title: title || undefined,
    // x values are Unix seconds; uPlot shows them in the reader's time zone.
    series: [x ? { label: x.label, value: (_, v) => (v == null ? '—' : `${num(v)} ${x.unit || ''}`) } : {},
      ...series.map((s, i) => ({
      label: s.label,
      stroke: s.color || COLORS[i % COLORS.length],
      width: 2,
      value: (_, v) => (v === null || v === undefined ? '—' : `${yNum(v)} ${s.unit || unit}`),
    }))],
    axes: [
      x ? { stroke: '#222', grid: { stroke: '#e3e3e3' }, label: x.label, values: (_, ticks) => ticks.map(num) }
        : { stroke: '#222', grid: { stroke: '#e3e3e3' } },
      { stroke: '#222', grid: { stroke: '#e3e3e3' }, label: unit, size: 56,
        values: (_, ticks) => ticks.map(yNum) },
    ],
    scales: {
      ...(x ? { x: { time: false, distr: x.log ? 3 : 1 } } : {}),
      // ySpan: the least height of the y axis (1 GPU; a small sum of money needs less).
      y: { range: (_, lo, hi) => [Math.min(yMin, lo), yMax ?? Math.max(hi, yMin + ySpan)] },
    },
    legend: { live: true },
  };
  const data = [[], ...series.map(() => [])];
  const plot = new uPlot(opts, data, el);
  const resize = new ResizeObserver(() => {
    const width = Math.max(200, el.clientWidth);
    if (width !== plot.width) plot.setSize({ width, height });
  });
  resize.observe(el);
  return {
    setData(columns) {
      plot.setData(columns);
    },
    destroy() {
      resize.disconnect();
      plot.destroy();
    },
  };
}
