// Overview: role, entity identifier, enabled endpoints with the URLs the Entity Configuration
// publishes, signing keys and the next rotation, and what waits for a decision.

import { api } from './api.js';
import { badge, h, mount, section, table, time } from './dom.js';

/** Metadata claim that publishes each endpoint type's URL. */
const CLAIM = {
  fetch: 'federation_fetch_endpoint', list: 'federation_list_endpoint',
  resolve: 'federation_resolve_endpoint', trust_mark_status: 'federation_trust_mark_status_endpoint',
  trust_mark_listing: 'federation_trust_mark_list_endpoint', trust_mark: 'federation_trust_mark_endpoint',
  historical_keys: 'federation_historical_keys_endpoint', entity_collection: 'federation_collection_endpoint',
};

/**
 * The entity's role, from what it does: issuing subordinate statements (fetch, list) makes it
 * an anchor or, with authority hints, an intermediate; issuing trust marks a trust mark issuer;
 * resolving a resolver; with none of these it is a leaf (or, without hints, standalone).
 */
export function role(ec, endpoints) {
  const hints = (ec.authority_hints || []).length > 0;
  const serves = (...types) => endpoints.some((e) => e.path && types.includes(e.type));
  const roles = [];
  if (serves('fetch', 'list')) roles.push(hints ? 'intermediate entity' : 'trust anchor');
  if (serves('trust_mark', 'trust_mark_status', 'trust_mark_listing')) roles.push('trust mark issuer');
  if (serves('resolve')) roles.push('resolver');
  if (!roles.length) return hints ? 'Leaf entity' : 'Standalone entity (no authority hints)';
  const text = roles.length === 1 ? roles[0] : `${roles.slice(0, -1).join(', ')} and ${roles.at(-1)}`;
  return text[0].toUpperCase() + text.slice(1);
}

export async function render(view) {
  const [ec, endpoints, kms, subs] = await Promise.all([
    api('GET', '/entity-configuration'),
    api('GET', '/federation-endpoints'),
    api('GET', '/kms'),
    api('GET', '/subordinates?status=pending'),
  ]);
  const fe = ec.metadata?.federation_entity || {};
  const published = (t) => fe[CLAIM[t]] || Object.entries(fe).find(([k, v]) => k.includes(t) && typeof v === 'string')?.[1];
  const keys = ec.jwks?.keys || [];
  const newest = Math.max(0, ...keys.map((k) => k.iat || 0));
  const rot = kms.rotation || {};
  const next = rot.enabled && newest ? time(newest + rot.interval) : 'automatic rotation is off';
  mount(view,
    h('h1', {}, 'Overview'),
    h('div', { class: 'cards' },
      h('div', { class: 'card' }, h('div', { class: 'muted' }, 'Role'), h('div', { class: 'value', 'data-field': 'role' }, role(ec, endpoints))),
      h('div', { class: 'card' }, h('div', { class: 'muted' }, 'Enabled endpoints'), h('div', { class: 'value' }, endpoints.filter((e) => e.path).length)),
      h('div', { class: 'card' }, h('div', { class: 'muted' }, 'Pending enrollment requests'),
        h('div', { class: 'value' }, subs.length ? h('a', { href: '#/subordinates' }, String(subs.length)) : '0'))),
    h('dl', { class: 'kv' },
      h('dt', {}, 'Entity identifier'), h('dd', {}, h('code', { 'data-field': 'entity-id' }, ec.sub)),
      h('dt', {}, 'Entity types'), h('dd', {}, Object.keys(ec.metadata || {}).join(', ') || '—'),
      h('dt', {}, 'Authority hints'), h('dd', {}, (ec.authority_hints || []).join(', ') || 'none'),
      h('dt', {}, 'Entity Configuration'), h('dd', {}, `issued ${time(ec.iat)}, expires ${time(ec.exp)}`)),
    section('Enabled endpoints', table('Endpoints served and their published URLs', [
      ['Type', (e) => h('code', {}, e.type)],
      ['Path', (e) => e.path],
      ['Published URL', (e) => published(e.type) || '—'],
      ['Client authentication', (e) => (e.auth_enabled ? 'required' : 'no')],
    ], endpoints.filter((e) => e.path), 'No endpoint is enabled.')),
    section('Signing keys', h('dl', { class: 'kv' },
      h('dt', {}, 'Key management'), h('dd', {}, `${kms.kms}, ${kms.alg}${kms.pending_alg ? ` (switching to ${kms.pending_alg} at ${time(kms.alg_change_at)})` : ''}`),
      h('dt', {}, 'Next rotation'), h('dd', {}, next)),
    table('Published keys', [
      ['Key id', (k) => h('code', {}, k.kid)],
      ['Algorithm', (k) => k.alg || k.kty],
      ['Created', (k) => time(k.iat)],
      ['Valid from', (k) => time(k.nbf)],
      ['Expires', (k) => (k.exp ? time(k.exp) : '—')],
      ['State', (k) => badge(k.exp && k.exp * 1000 < Date.now() ? 'expired' : (k.nbf && k.nbf * 1000 > Date.now() ? 'announced' : 'active'))],
    ], keys, 'No keys.')));
}
