// Federation map: who is in the federation and under whom, from this entity's subordinates
// and the entity collector's last walk (GET /federation-map). Drawn for thousands: an
// aggregate picture of the superiors, then a tree whose branches open on demand and show
// their members a page at a time, and a search that lists matches with their path.
// Everything here comes from other entities' statements: it is shown as text only, and no
// URL from them is ever loaded.

import { api } from './api.js';
import { badge, field, h, mount, plural, section, time } from './dom.js';

const PAGE = 100;
const NS = 'http://www.w3.org/2000/svg';
const STATUSES = ['root', 'active', 'pending', 'blocked', 'inactive', 'collected'];

/** The map's nodes indexed for drawing: by id, and children by superior (sorted). */
export function index(map) {
  const byId = new Map(map.nodes.map((n) => [n.entity_id, n]));
  const children = new Map();
  for (const n of map.nodes) {
    if (!n.superior || n.entity_id === map.root) continue;
    if (!children.has(n.superior)) children.set(n.superior, []);
    children.get(n.superior).push(n);
  }
  // Superiors first, then leaves; each in identifier order (the answer's order).
  for (const list of children.values()) list.sort((a, b) => (b.subordinates > 0) - (a.subordinates > 0));
  return { byId, children };
}

/** root › … › entity, from the superiors the map names (cycles cut). */
export function path(n, byId) {
  const names = [n.entity_id];
  const seen = new Set(names);
  let s = n.superior;
  while (s && !seen.has(s)) {
    names.unshift(s);
    seen.add(s);
    s = byId.get(s)?.superior;
  }
  return names;
}

export async function render(view) {
  const map = await api('GET', '/federation-map');
  const { byId, children } = index(map);
  const counts = {};
  for (const n of map.nodes) counts[n.status] = (counts[n.status] || 0) + 1;
  const types = [...new Set(map.nodes.flatMap((n) => n.entity_types))].sort();
  const search = h('input', { name: 'search', type: 'search' });
  const status = h('select', { name: 'status' },
    h('option', { value: '' }, 'any'), STATUSES.map((s) => h('option', { value: s }, s)));
  const type = h('select', { name: 'entity_type' },
    h('option', { value: '' }, 'any'), types.map((t) => h('option', { value: t }, t)));
  const expiring = h('input', { name: 'keys_expiring', type: 'checkbox' });
  const results = h('div', { 'aria-live': 'polite', 'data-field': 'map-results' });
  const tree = h('div', { 'data-field': 'map-tree' });
  const root = byId.get(map.root);
  tree.append(h('ul', { class: 'tree', 'aria-label': 'Federation tree' }, item(root, children, true)));
  const filter = () => {
    const needle = search.value.trim().toLowerCase();
    const active = needle || status.value || type.value || expiring.checked;
    tree.hidden = !!active;
    if (!active) { mount(results); return; }
    const matches = map.nodes.filter((n) => (!needle || n.entity_id.toLowerCase().includes(needle))
      && (!status.value || n.status === status.value)
      && (!type.value || n.entity_types.includes(type.value))
      && (!expiring.checked || n.keys_expiring));
    mount(results, h('p', {}, plural(matches.length, 'match', 'matches')),
      paged(matches, (n) => h('li', {}, nodeLine(n), h('div', { class: 'muted' }, path(n, byId).join(' › '))), 'Matches'));
  };
  for (const c of [search, status, type, expiring]) c.addEventListener(c === search ? 'input' : 'change', filter);
  mount(view,
    h('h1', {}, 'Federation map'),
    h('div', { class: 'cards' },
      card('Entities', map.total, 'map-total'),
      card('Superiors', map.nodes.filter((n) => n.subordinates > 0).length),
      card('Blocked', counts.blocked || 0), card('Pending', counts.pending || 0),
      card('Keys expiring', map.nodes.filter((n) => n.keys_expiring).length)),
    h('p', { class: 'muted' }, map.collected_at
      ? `Walked from ${map.root} at ${time(map.collected_at)}, with this entity's own subordinates.`
      : 'No entity collection of this federation yet: this entity\'s own subordinates only.'),
    map.truncated ? h('p', { class: 'error', role: 'status' }, `Showing ${map.nodes.length} of ${map.total}: every superior, and the first leaves.`) : null,
    section('Superiors by size', picture(map)),
    h('div', { class: 'toolbar', role: 'search' },
      field('Search', search), field('Status', status), field('Entity type', type), field('Keys expiring', expiring)),
    results, tree);
}

const card = (label, value, name) => h('div', { class: 'card' }, h('div', { class: 'muted' }, label),
  h('div', { class: 'value', 'data-field': name }, String(value)));

/** One entity on a line: identifier, status, types, marks, expiring keys — as text. */
function nodeLine(n) {
  return h('span', { class: 'node' },
    h('code', {}, n.entity_id), ' ', badge(n.status),
    n.entity_types.length ? ` ${n.entity_types.join(', ')}` : '',
    n.trust_marks.length ? ` · ${plural(n.trust_marks.length, 'trust mark')}` : '',
    n.keys_expiring ? h('span', { class: 'badge blocked' }, 'keys expiring') : '',
    n.subordinates ? ` · ${plural(n.subordinates, 'subordinate')}` : '');
}

/**
 * A tree item: a superior is a <details> whose members are drawn when it is first opened,
 * a page at a time; a leaf is a line.
 */
function item(n, children, open = false) {
  const kids = children.get(n.entity_id) || [];
  if (!kids.length) return h('li', { 'data-entity': n.entity_id }, nodeLine(n));
  const details = h('details', { open: open || null }, h('summary', {}, nodeLine(n)));
  let drawn = false;
  const draw = () => {
    if (drawn || !details.open) return;
    drawn = true;
    details.append(paged(kids, (k) => item(k, children), `Members of ${n.entity_id}`));
  };
  details.addEventListener('toggle', draw);
  if (open) queueMicrotask(draw);
  return h('li', { 'data-entity': n.entity_id }, details);
}

/** A list drawn PAGE items at a time, with a button for the next page. */
function paged(all, draw, label) {
  const ul = h('ul', { class: 'tree', 'aria-label': label });
  let shown = 0;
  const more = h('button', { type: 'button', class: 'secondary' });
  const next = () => {
    const page = all.slice(shown, shown + PAGE);
    shown += page.length;
    ul.append(...page.map(draw));
    more.hidden = shown >= all.length;
    more.textContent = `Show ${Math.min(PAGE, all.length - shown)} more of ${all.length - shown}`;
  };
  more.addEventListener('click', next);
  next();
  return h('div', {}, ul, more);
}

/** The largest superiors as bars (their member counts), the shape of the federation at a glance. */
function picture(map) {
  const sups = map.nodes.filter((n) => n.subordinates > 0)
    .sort((a, b) => b.subordinates - a.subordinates).slice(0, 25);
  if (!sups.length) return h('p', { class: 'muted' }, 'No entity has subordinates yet.');
  const W = 900; const row = 20; const left = 330;
  const max = Math.max(...sups.map((s) => s.subordinates));
  const svg = document.createElementNS(NS, 'svg');
  const attrs = (e, a) => { for (const [k, v] of Object.entries(a)) e.setAttribute(k, String(v)); return e; };
  attrs(svg, { viewBox: `0 0 ${W} ${sups.length * row + 6}`, class: 'plot', role: 'img', 'data-plot': 'superiors',
    'aria-label': `The ${sups.length} largest superiors by number of members; the tree below lists them all` });
  sups.forEach((s, i) => {
    const y = i * row + 3;
    const label = attrs(document.createElementNS(NS, 'text'), { x: 2, y: y + 13 });
    label.textContent = s.entity_id.length > 48 ? `${s.entity_id.slice(0, 47)}…` : s.entity_id;
    const bar = attrs(document.createElementNS(NS, 'rect'), {
      x: left, y, height: row - 5, width: Math.max(1, ((W - left - 60) * s.subordinates) / max),
      class: s.status === 'root' ? 's2' : 's1', 'data-label': s.entity_id, 'data-value': s.subordinates,
    });
    const title = document.createElementNS(NS, 'title');
    title.textContent = `${s.entity_id}: ${plural(s.subordinates, 'member')}`;
    bar.append(title);
    const value = attrs(document.createElementNS(NS, 'text'), { x: left + Number(bar.getAttribute('width')) + 4, y: y + 13 });
    value.textContent = String(s.subordinates);
    svg.append(label, bar, value);
  });
  return h('figure', {}, svg);
}
