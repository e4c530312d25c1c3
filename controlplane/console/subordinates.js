// Subordinates: search and filters, creation, approval of pending enrollment requests,
// blocking and unblocking, and a detail view where everything about one subordinate is
// edited (settings, keys, metadata, policies, constraints, claims) and its history read.

import { api, getTagged, seg } from './api.js';
import { announce, badge, clearErrors, confirmAction, field, h, mount, parseJson, plural, section, showError, table, time } from './dom.js';
import { jsonEditor } from './editor.js';

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
    createForm(refresh),
    section('Defaults for every subordinate', h('p', { class: 'muted' },
      'Used in the statement of each subordinate that has none of its own.'),
    h('div', { class: 'grid2' }, await Promise.all([
      jsonEditor({ title: 'Default metadata policy', path: '/subordinates/metadata-policies', name: 'metadata_policy', remove: true }),
      jsonEditor({ title: 'Default constraints', path: '/subordinates/constraints', name: 'constraints', remove: true }),
      jsonEditor({ title: 'Default additional claims', path: '/subordinates/additional-claims', name: 'additional_claims' }),
      jsonEditor({ title: 'Critical policy operators', path: '/subordinates/metadata-policy-crit', name: 'metadata_policy_crit', hint: 'Operators a subordinate must understand (metadata_policy_crit), as a list.' }),
      jsonEditor({ title: 'Statement lifetime', path: '/subordinates/lifetime', name: 'lifetime', hint: 'Seconds from issuance to expiry of Subordinate Statements.' }),
    ]))));
  await refresh();
}

/** Approve / decline (pending), block (active), unblock (blocked). */
function actions(r, refresh) {
  const set = (to, label) => h('button', {
    type: 'button', class: to === 'blocked' ? 'danger' : null,
    'aria-label': `${label} ${r.entity_id}`,
    onclick: async (ev) => {
      const button = ev.currentTarget;
      if (to === 'blocked' && !(await confirmAction(
        `${label} ${r.entity_id}? Its Subordinate Statement is no longer served and it cannot enrol again.`, label))) return;
      button.disabled = true;
      try {
        await api('PUT', `/subordinates/${seg(r.entity_id)}/status`, to, { text: true });
        announce(`${r.entity_id}: ${to}`);
        await refresh();
      } catch (e) {
        button.disabled = false;
        announce(`${label} failed: ${e.message}`);
        button.parentElement.append(h('p', { class: 'error', role: 'alert' }, e.message));
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
  const poll = h('input', { name: 'enable_jwks_update', type: 'checkbox' });
  const interval = h('input', { name: 'jwks_poll_interval', inputmode: 'numeric', placeholder: '0' });
  const form = h('form', { class: 'panel', 'aria-label': 'New subordinate', novalidate: true },
    h('h2', {}, 'New subordinate'),
    field('Entity identifier', entity),
    field('Description', description),
    field('Entity types', types, 'Comma-separated, e.g. openid_relying_party, federation_entity.'),
    field('Status', status),
    field('JWKS', jwks, 'The subordinate\'s federation keys, as a JSON Web Key Set.'),
    field('Poll its Entity Configuration for key changes', poll),
    field('Poll interval (seconds, 0 = the default)', interval),
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
        enable_jwks_update: poll.checked,
      };
      if (interval.value.trim()) {
        if (!/^\d+$/.test(interval.value.trim())) throw new Error('jwks_poll_interval: a whole number of seconds');
        body.jwks_poll_interval = Number(interval.value.trim());
      }
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
  const base = `/subordinates/${seg(id)}`;
  const [rec, hist] = await Promise.all([
    api('GET', base),
    api('GET', `${base}/history?limit=50`),
  ]);
  const keys = rec.jwks?.keys || [];
  const again = () => detail(view, id);
  const settings = await settingsForm(base);
  const onSaved = () => settings.reload();
  const editors = await Promise.all([
    jsonEditor({ title: 'Metadata', path: `${base}/metadata`, name: 'metadata', hint: 'Entity type → claims; published in the Subordinate Statement\'s metadata claim (applied before the policies).', onSaved }),
    jsonEditor({ title: 'Metadata policy', path: `${base}/metadata-policies`, name: 'metadata_policy', hint: 'Entity type → claim → operator → value, e.g. {"openid_relying_party": {"grant_types": {"subset_of": ["authorization_code"]}}}.', remove: true, onSaved }),
    jsonEditor({ title: 'Constraints', path: `${base}/constraints`, name: 'constraints', hint: 'max_path_length, naming_constraints (permitted, excluded), allowed_entity_types.', remove: true, onSaved }),
    jsonEditor({ title: 'Keys (JWKS)', path: `${base}/jwks`, name: 'jwks', hint: 'The subordinate\'s federation keys, as a JSON Web Key Set: {"keys": [...]}.', onSaved }),
    jsonEditor({ title: 'Additional claims', path: `${base}/additional-claims`, name: 'additional_claims', hint: 'A list of {"claim", "value", "crit"} added to its statement (instead of the defaults).', onSaved }),
  ]);
  mount(view,
    h('p', {}, h('a', { href: '#/subordinates' }, '← All subordinates')),
    h('h1', {}, rec.entity_id),
    h('dl', { class: 'kv' },
      h('dt', {}, 'Status'), h('dd', {}, badge(rec.status), ' ', actions(rec, again)),
      h('dt', {}, 'Description'), h('dd', {}, rec.description || '—'),
      h('dt', {}, 'Entity types'), h('dd', {}, rec.registered_entity_types.join(', ') || '—'),
      h('dt', {}, 'Keys polled'), h('dd', {}, rec.enable_jwks_update ? 'yes' : 'no'),
      h('dt', {}, 'Created'), h('dd', {}, time(rec.created_at)),
      h('dt', {}, 'Updated'), h('dd', {}, time(rec.updated_at))),
    settings,
    section('Keys', table('Keys', [
      ['Key id', (k) => h('code', {}, k.kid || '—')],
      ['Type', (k) => [k.kty, k.crv || k.alg].filter(Boolean).join(' ')],
      ['Expires', (k) => (k.exp ? time(k.exp) : '—')],
    ], keys, 'No keys.')),
    section('Edit', h('div', { class: 'grid2' }, editors)),
    section('History', table('Events, newest first', [
      ['When', (e) => time(e.timestamp ?? e.created_at ?? e.at)],
      ['Event', (e) => e.type ?? e.kind ?? e.event ?? ''],
      ['Actor', (e) => e.actor ?? '—'],
      ['Status', (e) => e.status ?? ''],
      ['Message', (e) => e.message ?? ''],
    ], hist.events, 'No events.')),
    section('Delete', deleteButton(rec)));
}

/**
 * Description, entity types and key polling (PATCH, with the record's entity tag). Edits of
 * the metadata, policy, constraints or keys change the record too: `reload` reads it again
 * after each, so the tag stays the one of the record on screen.
 */
async function settingsForm(base) {
  const description = h('input', { name: 'description' });
  const types = h('input', { name: 'registered_entity_types' });
  const poll = h('input', { name: 'enable_jwks_update', type: 'checkbox' });
  const interval = h('input', { name: 'jwks_poll_interval', inputmode: 'numeric' });
  const shown = h('p', { class: 'muted', 'data-field': 'description' });
  const form = h('form', { class: 'panel', 'aria-label': 'Subordinate settings', novalidate: true },
    h('h2', {}, 'Settings'),
    field('Description', description),
    field('Entity types', types, 'Comma-separated, e.g. openid_relying_party, federation_entity.'),
    field('Poll its Entity Configuration for key changes', poll),
    field('Poll interval (seconds, 0 = the default)', interval),
    h('button', { type: 'submit' }, 'Save settings'), shown);
  let tag = null;
  form.reload = async () => {
    const r = await getTagged(base);
    tag = r.tag;
    description.value = r.value.description || '';
    types.value = r.value.registered_entity_types.join(', ');
    poll.checked = !!r.value.enable_jwks_update;
    interval.value = String(r.value.jwks_poll_interval ?? 0);
    shown.textContent = `Saved description: ${r.value.description || '—'}`;
  };
  await form.reload();
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      const n = interval.value.trim();
      if (!/^\d+$/.test(n)) throw new Error('jwks_poll_interval: a whole number of seconds');
      await api('PATCH', base, {
        description: description.value,
        registered_entity_types: types.value.split(',').map((t) => t.trim()).filter(Boolean),
        enable_jwks_update: poll.checked,
        jwks_poll_interval: Number(n),
      }, { ifMatch: tag });
      announce('Settings saved');
      await form.reload();
    } catch (e) {
      showError(form, e.status === 412 ? new Error('Changed by someone else after you opened it; nothing was saved. Reload the page.') : e,
        'description', { registered_entity_types: ['entity type', 'entity_type'] });
    }
  });
  return form;
}

/** Removes the subordinate (its history rows stay), after a confirmation. */
function deleteButton(rec) {
  return h('button', {
    type: 'button', class: 'danger', 'aria-label': `Delete ${rec.entity_id}`,
    onclick: async (ev) => {
      if (!(await confirmAction(`Delete ${rec.entity_id}? Its Subordinate Statement is no longer served; its history is kept.`, 'Delete'))) return;
      try {
        await api('DELETE', `/subordinates/${seg(rec.entity_id)}`);
        announce(`${rec.entity_id}: deleted`);
        location.hash = '#/subordinates';
      } catch (e) {
        ev.target.after(h('p', { class: 'error', role: 'alert' }, e.message));
      }
    },
  }, 'Delete subordinate');
}
