// Subordinates: search and filters, creation, approval of pending enrollment requests,
// blocking and unblocking, and a detail view (keys, metadata, policies, history).

import { api, seg } from './api.js';
import { announce, badge, clearErrors, field, h, json, mount, parseJson, plural, section, showError, table, time } from './dom.js';

const STATUSES = ['active', 'pending', 'blocked', 'inactive'];

export async function render(view, params) {
  if (params[0]) return detail(view, params[0]);
  const list = await api('GET', '/subordinates');
  const types = [...new Set(list.flatMap((s) => s.registered_entity_types))].sort();
  const search = h('input', { name: 'search', type: 'search', value: '' });
  const status = h('select', { name: 'status' },
    h('option', { value: '' }, 'any'), STATUSES.map((s) => h('option', { value: s }, s)));
  const type = h('select', { name: 'entity_type' },
    h('option', { value: '' }, 'any'), types.map((t) => h('option', { value: t }, t)));
  const results = h('div', { 'aria-live': 'polite' });
  const refresh = async () => {
    const p = new URLSearchParams();
    if (status.value) p.set('status', status.value);
    if (type.value) p.set('entity_type', type.value);
    const rows = await api('GET', `/subordinates${p.size ? `?${p}` : ''}`);
    const needle = search.value.trim().toLowerCase();
    const shown = rows.filter((r) => !needle
      || r.entity_id.toLowerCase().includes(needle) || r.description.toLowerCase().includes(needle));
    mount(results, table(plural(shown.length, 'subordinate'), [
      ['Entity identifier', (r) => h('a', { href: `#/subordinates/${seg(r.entity_id)}` }, r.entity_id)],
      ['Status', (r) => badge(r.status)],
      ['Entity types', (r) => r.registered_entity_types.join(', ') || '—'],
      ['Updated', (r) => time(r.updated_at)],
      ['Actions', (r) => actions(r, refresh)],
    ], shown, 'No subordinate matches.'));
  };
  const again = () => refresh().catch((e) => mount(results, h('p', { class: 'error', role: 'alert' }, e.message)));
  search.addEventListener('input', again);
  status.addEventListener('change', again);
  type.addEventListener('change', again);
  const pending = list.filter((s) => s.status === 'pending');
  mount(view,
    h('h1', {}, 'Subordinates'),
    pending.length
      ? h('p', {}, `${plural(pending.length, 'enrollment request')} ${pending.length === 1 ? 'waits' : 'wait'} for a decision: approve or decline ${pending.length === 1 ? 'it' : 'them'} below.`)
      : null,
    h('div', { class: 'toolbar', role: 'search' },
      field('Search', search), field('Status', status), field('Entity type', type)),
    results,
    createForm(refresh));
  await refresh();
}

/** Approve / decline (pending), block (active), unblock (blocked). */
function actions(r, refresh) {
  const set = (to, label) => h('button', {
    type: 'button', class: to === 'blocked' ? 'danger' : null,
    'aria-label': `${label} ${r.entity_id}`,
    onclick: async (ev) => {
      ev.target.disabled = true;
      try {
        await api('PUT', `/subordinates/${seg(r.entity_id)}/status`, to, { text: true });
        announce(`${r.entity_id}: ${to}`);
        await refresh();
      } catch (e) {
        ev.target.disabled = false;
        announce(`${label} failed: ${e.message}`);
        ev.target.parentElement.append(h('p', { class: 'error', role: 'alert' }, e.message));
      }
    },
  }, label);
  const b = [];
  if (r.status === 'pending') b.push(set('active', 'Approve'), set('blocked', 'Decline'));
  if (r.status === 'active') b.push(set('blocked', 'Block'));
  if (r.status === 'blocked' || r.status === 'inactive') b.push(set('active', 'Unblock'));
  return h('div', { class: 'actions' }, b);
}

function createForm(refresh) {
  const entity = h('input', { name: 'entity_id', type: 'url', required: true, placeholder: 'https://rp.example.org' });
  const description = h('input', { name: 'description' });
  const types = h('input', { name: 'registered_entity_types', placeholder: 'openid_relying_party' });
  const status = h('select', { name: 'status' }, STATUSES.map((s) => h('option', { value: s }, s)));
  const jwks = h('textarea', { name: 'jwks', rows: 5, placeholder: '{"keys": [...]}' });
  const form = h('form', { class: 'panel', 'aria-label': 'New subordinate', novalidate: true },
    h('h2', {}, 'New subordinate'),
    field('Entity identifier', entity),
    field('Description', description),
    field('Entity types', types, 'Comma-separated, e.g. openid_relying_party, federation_entity.'),
    field('Status', status),
    field('JWKS', jwks, 'The subordinate\'s federation keys, as a JSON Web Key Set.'),
    h('button', { type: 'submit' }, 'Create subordinate'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      const body = {
        entity_id: entity.value.trim(),
        description: description.value,
        registered_entity_types: types.value.split(',').map((t) => t.trim()).filter(Boolean),
        status: status.value,
      };
      const keys = parseJson(jwks.value, 'jwks');
      if (keys !== undefined) body.jwks = keys;
      await api('POST', '/subordinates', body);
      announce(`Created ${body.entity_id}`);
      form.reset();
      await refresh();
    } catch (e) {
      showError(form, e, 'entity_id', { jwks: ['keys', 'jwk'], registered_entity_types: ['entity type', 'entity_type'] });
    }
  });
  return form;
}

async function detail(view, id) {
  const [rec, hist] = await Promise.all([
    api('GET', `/subordinates/${seg(id)}`),
    api('GET', `/subordinates/${seg(id)}/history?limit=50`),
  ]);
  const keys = rec.jwks?.keys || [];
  mount(view,
    h('p', {}, h('a', { href: '#/subordinates' }, '← All subordinates')),
    h('h1', {}, rec.entity_id),
    h('dl', { class: 'kv' },
      h('dt', {}, 'Status'), h('dd', {}, badge(rec.status), ' ', actions(rec, () => detail(view, id))),
      h('dt', {}, 'Description'), h('dd', {}, rec.description || '—'),
      h('dt', {}, 'Entity types'), h('dd', {}, rec.registered_entity_types.join(', ') || '—'),
      h('dt', {}, 'Keys polled'), h('dd', {}, rec.enable_jwks_update ? 'yes' : 'no'),
      h('dt', {}, 'Created'), h('dd', {}, time(rec.created_at)),
      h('dt', {}, 'Updated'), h('dd', {}, time(rec.updated_at))),
    section('Keys', table('Keys', [
      ['Key id', (k) => h('code', {}, k.kid || '—')],
      ['Type', (k) => [k.kty, k.crv || k.alg].filter(Boolean).join(' ')],
      ['Expires', (k) => (k.exp ? time(k.exp) : '—')],
    ], keys, 'No keys.')),
    section('Metadata', json(rec.metadata)),
    section('Metadata policies', json(rec.metadata_policy)),
    section('Constraints', json(rec.constraints)),
    section('History', table('Events, newest first', [
      ['When', (e) => time(e.timestamp ?? e.created_at ?? e.at)],
      ['Event', (e) => e.type ?? e.kind ?? e.event ?? ''],
      ['Actor', (e) => e.actor ?? '—'],
      ['Status', (e) => e.status ?? ''],
      ['Message', (e) => e.message ?? ''],
    ], hist.events, 'No events.')));
}
