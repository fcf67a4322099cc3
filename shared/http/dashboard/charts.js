// The last hour's histograms as bar charts (uPlot, vendored in vendor/), each with the same
// figures in a table for screen readers and keyboard users.

import uPlot from './vendor/uPlot.esm.js';
import { h, replace, table, whenChanged } from './dom.js';
import { duration } from './format.js';

/** `≤ 1 min`, ..., `> 2 h`: the buckets of a histogram of seconds. */
function bucketLabels(bounds) {
  return [...bounds.map((b) => `≤ ${duration(b)}`), `> ${duration(bounds[bounds.length - 1])}`];
}

/** `1m`, ..., `>2h`: the same buckets, short enough for the axis. */
function axisLabels(bounds) {
  const short = (s) => (s < 3600 ? `${s / 60}m` : `${s / 3600}h`);
  return [...bounds.map(short), `>${short(bounds[bounds.length - 1])}`];
}

/** A chart of one histogram in `container`; `update` draws new figures. */
export function histogramChart(container, { id, title }) {
  const figure = h('figure', { class: 'chart', id },
    h('figcaption', { id: `${id}-title` }, title));
  const plotArea = h('div', { class: 'plot', role: 'img', 'aria-labelledby': `${id}-title` });
  const summary = h('p', { class: 'chart-summary' });
  const figures = h('div', { class: 'sr-only' });
  figure.append(plotArea, summary, figures);
  container.append(figure);
  let plot = null;
  let labels = [];
  let ticks = [];

  /** Draws the histogram again when it changed. */
  const update = whenChanged((histogram) => {
    labels = bucketLabels(histogram.bounds);
    ticks = axisLabels(histogram.bounds);
    const xs = labels.map((_, i) => i);
    const data = [xs, histogram.counts];
    const mean = histogram.count ? histogram.sum / histogram.count : null;
    summary.textContent = histogram.count
      ? `${histogram.count} observed, mean ${duration(mean)}`
      : 'Nothing observed in the last hour';
    replace(figures, table(`${title}: observations per bucket`, ['Bucket', 'Count'],
      labels.map((label, i) => h('tr', {}, h('th', { scope: 'row' }, label),
        h('td', {}, histogram.counts[i])))));
    if (plot) {
      plot.setData(data);
      return;
    }
    plot = new uPlot({
      width: 380,
      height: 200,
      legend: { show: false },
      cursor: { show: false },
      scales: {
        x: { time: false, range: [-0.5, labels.length - 0.5] },
        y: { range: (_u, _min, max) => [0, Math.max(1, max)] },
      },
      axes: [
        {
          splits: () => ticks.map((_, i) => i),
          values: (_u, splits) => splits.map((s) => ticks[s] ?? ''),
          gap: 4,
        },
        { values: (_u, splits) => splits.map((s) => (Number.isInteger(s) ? String(s) : '')) },
      ],
      series: [
        {},
        {
          label: 'count',
          stroke: '#1f5fbf',
          fill: 'rgba(31, 95, 191, 0.55)',
          paths: uPlot.paths.bars({ size: [0.7, 60] }),
          points: { show: false },
        },
      ],
    }, data, plotArea);
  });

  return {
    update,
    destroy() {
      if (plot) plot.destroy();
    },
  };
}
