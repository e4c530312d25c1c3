// Hand-written SVG plots: a time series of paired bars (requests and errors per bucket) and
// horizontal bar lists (latency percentiles, top-N). No library; every plot is an <svg
// role="img"> with a caption and the same numbers as a table, for screen readers and copying.
// Each bar carries data-label / data-value and a <title> tooltip.

import { h, plural, uid } from './dom.js';

const NS = 'http://www.w3.org/2000/svg';

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

/** A round upper bound for an axis (1, 2 or 5 times a power of ten). */
export function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

const fmt = (v) => (Number.isInteger(v) ? String(v) : String(+v.toFixed(v < 10 ? 2 : 1)));
const short = (t, n) => (t.length > n ? `${t.slice(0, n - 1)}…` : t);

function figure(title, svg, description, tableEl, legend) {
  const cap = uid('cap');
  const desc = uid('desc');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-labelledby', cap);
  svg.setAttribute('aria-describedby', desc);
  svg.setAttribute('class', 'plot');
  return h('figure', { class: 'chart' },
    h('figcaption', { id: cap }, title),
    legend || null,
    svg,
    h('p', { id: desc, class: 'muted' }, description),
    h('details', {}, h('summary', {}, `${title}: data`), tableEl));
}

function dataTable(headers, rows) {
  return h('table', {},
    h('thead', {}, h('tr', {}, headers.map((t, i) => h('th', { scope: 'col', class: i ? 'num' : null }, t)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c, i) => h('td', { class: i ? 'num' : null }, c))))));
}

/**
 * Requests and errors per time bucket. `points`: [{label, a, b}]; `names`: the two series.
 */
export function timeBars(title, points, names = ['requests', 'errors']) {
  const W = 760, H = 260, L = 52, R = 12, T = 12, B = 44;
  const pw = W - L - R, ph = H - T - B;
  const max = niceMax(Math.max(0, ...points.map((p) => Math.max(p.a, p.b))));
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, 'data-plot': 'timeseries' });
  for (let i = 0; i <= 4; i += 1) {
    const y = T + ph - (ph * i) / 4;
    svg.append(s('line', { class: 'grid', x1: L, x2: W - R, y1: y, y2: y }));
    svg.append(s('text', { x: L - 6, y: y + 4, 'text-anchor': 'end' }, fmt((max * i) / 4)));
  }
  svg.append(s('line', { class: 'axis', x1: L, x2: W - R, y1: T + ph, y2: T + ph }));
  const n = Math.max(points.length, 1);
  const gw = pw / n;
  const bw = Math.max(1, Math.min(28, gw * 0.38));
  const every = Math.ceil(n / 8);
  points.forEach((p, i) => {
    const x0 = L + gw * i + gw / 2 - bw;
    [[p.a, 's1', names[0]], [p.b, 's2', names[1]]].forEach(([v, cls, name], j) => {
      const bh = (ph * v) / max;
      svg.append(s('rect', {
        class: cls, x: x0 + j * bw, y: T + ph - bh, width: bw, height: Math.max(bh, 0),
        'data-series': name, 'data-label': p.label, 'data-value': v,
      }, s('title', {}, `${p.label}: ${v} ${name}`)));
    });
    if (i % every === 0) {
      svg.append(s('text', { x: L + gw * i + gw / 2, y: H - B + 16, 'text-anchor': 'middle' }, short(p.label, 16)));
    }
  });
  const legend = h('p', { class: 'legend' },
    h('span', {}, h('span', { class: 'swatch s1', 'aria-hidden': 'true' }), names[0]),
    h('span', {}, h('span', { class: 'swatch s2', 'aria-hidden': 'true' }), names[1]));
  const total = (k) => points.reduce((a, p) => a + p[k], 0);
  const description = points.length
    ? `${plural(points.length, 'bucket')}, ${count(total('a'), names[0])} and ${count(total('b'), names[1])} in all.`
    : 'No data in this range.';
  return figure(title, svg, description,
    dataTable(['Bucket', names[0], names[1]], points.map((p) => [p.label, p.a, p.b])), legend);
}

/** `n` of a series named in the plural ("requests"): "1 request", "2 requests". */
const count = (n, many) => plural(n, many.replace(/s$/, ''), many);

/** Horizontal bars: `items` [{label, value}], values formatted with `unit`. */
export function hBars(title, items, unit = '', kind = 'bars') {
  const W = 560, L = 210, R = 70, row = 24, T = 6;
  const H = T * 2 + row * Math.max(items.length, 1);
  const pw = W - L - R;
  const max = niceMax(Math.max(0, ...items.map((i) => i.value)));
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, 'data-plot': kind });
  items.forEach((it, i) => {
    const y = T + i * row;
    const bw = (pw * it.value) / max;
    svg.append(s('text', { x: L - 8, y: y + row / 2 + 4, 'text-anchor': 'end' },
      s('title', {}, it.label), short(it.label, 32)));
    svg.append(s('rect', {
      class: 's1', x: L, y: y + 4, width: Math.max(bw, 0), height: row - 8,
      'data-label': it.label, 'data-value': it.value,
    }, s('title', {}, `${it.label}: ${fmt(it.value)}${unit}`)));
    svg.append(s('text', { x: L + bw + 6, y: y + row / 2 + 4 }, `${fmt(it.value)}${unit}`));
  });
  if (!items.length) svg.append(s('text', { x: L, y: T + row / 2 + 4 }, 'No data'));
  const description = items.length ? `${plural(items.length, 'entry', 'entries')}; largest ${fmt(Math.max(...items.map((i) => i.value)))}${unit}.` : 'No data in this range.';
  return figure(title, svg, description,
    dataTable(['Name', 'Value'], items.map((i) => [i.label, `${fmt(i.value)}${unit}`])));
}
