// Statistics: requests and errors over time, latency percentiles, top endpoints, clients,
// user agents and countries, all from /stats/*; CSV export of the raw records.

import { api, download } from './api.js';
import { announce, field, h, mount } from './dom.js';
import { hBars, timeBars } from './plots.js';

/** Ranges offered, with the bucket each is drawn in. */
const RANGES = {
  '1h': ['Last hour', 3600, 'minute'],
  '24h': ['Last 24 hours', 86400, 'hour'],
  '7d': ['Last 7 days', 7 * 86400, 'day'],
  '30d': ['Last 30 days', 30 * 86400, 'day'],
};

const iso = (d) => d.toISOString().replace(/\.\d+Z$/, 'Z');

export async function render(view) {
  const range = h('select', { name: 'range' },
    Object.entries(RANGES).map(([k, [label]]) => h('option', { value: k, selected: k === '24h' }, label)));
  const body = h('div', { 'aria-live': 'polite' });
  const exportButton = h('button', { type: 'button', class: 'secondary' }, 'Export CSV');
  const query = () => {
    const [, secs, interval] = RANGES[range.value];
    const to = new Date();
    const from = new Date(to.getTime() - secs * 1000);
    return { q: `from=${encodeURIComponent(iso(from))}&to=${encodeURIComponent(iso(to))}`, interval };
  };
  exportButton.addEventListener('click', async () => {
    try {
      await download(`/stats/export?${query().q}&format=csv`, 'stats.csv');
      announce('Exported stats.csv');
    } catch (e) {
      announce(`Export failed: ${e.message}`);
    }
  });
  const draw = async () => {
    const { q, interval } = query();
    const [summary, series, latency, ...tops] = await Promise.all([
      api('GET', `/stats/summary?${q}`),
      api('GET', `/stats/timeseries?${q}&interval=${interval}`),
      api('GET', `/stats/latency?${q}`),
      ...['endpoints', 'user-agents', 'clients', 'countries'].map((w) => api('GET', `/stats/top/${w}?${q}&limit=10`)),
    ]);
    const s = summary.summary;
    const l = latency.latency;
    const items = (body, member) => (body[member] || []).map((c) => ({ label: c.value || '(none)', value: c.count }));
    const label = (t) => (interval === 'day' ? t.slice(0, 10) : t.slice(0, 16).replace('T', ' '));
    mount(body,
      h('div', { class: 'cards' },
        card('Requests', s.total_requests, 'total-requests'),
        card('Errors', `${s.total_errors} (${(s.error_rate * 100).toFixed(1)} %)`, 'total-errors'),
        card('Median latency', `${s.p50_latency_ms.toFixed(2)} ms`),
        card('Clients', s.unique_clients)),
      timeBars(`Requests and errors per ${interval}`,
        series.timeseries.map((p) => ({ label: label(p.timestamp), a: p.request_count, b: p.error_count }))),
      h('div', { class: 'grid2' },
        hBars('Latency percentiles', [
          ['p50', l.p50_ms], ['p75', l.p75_ms], ['p90', l.p90_ms], ['p95', l.p95_ms], ['p99', l.p99_ms], ['max', l.max_ms],
        ].map(([k, v]) => ({ label: k, value: v })), ' ms', 'latency'),
        hBars('Top endpoints', items(tops[0], 'endpoints'), '', 'endpoints'),
        hBars('Top user agents', items(tops[1], 'user_agents'), '', 'user-agents'),
        hBars('Top clients', items(tops[2], 'clients'), '', 'clients'),
        hBars('Top countries', items(tops[3], 'countries'), '', 'countries')));
  };
  range.addEventListener('change', () => draw().catch((e) => mount(body, h('p', { class: 'error', role: 'alert' }, e.message))));
  mount(view,
    h('h1', {}, 'Statistics'),
    h('div', { class: 'toolbar' }, field('Range', range), exportButton),
    body);
  await draw();
}

function card(title, value, key) {
  return h('div', { class: 'card' }, h('div', { class: 'muted' }, title), h('div', { class: 'value', 'data-field': key }, String(value)));
}
