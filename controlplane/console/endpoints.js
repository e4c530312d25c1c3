// Federation endpoints: enable, disable, and edit path, published URL and configuration. The
// API validates; its message is shown next to the field it names.

import { api, getTagged, seg } from './api.js';
import { announce, clearErrors, field, h, mount, parseJson, showError } from './dom.js';

export const TYPES = ['fetch', 'list', 'resolve', 'trust_mark_status', 'trust_mark_listing',
  'trust_mark', 'historical_keys', 'enroll', 'enroll_request', 'trust_mark_request',
  'entity_collection', 'jwks_update_trigger', 'jwks_update', 'extended_list',
  'subordinate_events'];

/** Which field an API message concerns (anything unrecognised is about the configuration). */
const ALIASES = { auth_trust_anchors: ['trust anchor', 'auth_enabled'], url: ['URL'] };

export async function render(view) {
  const [list, anchors] = await Promise.all([api('GET', '/federation-endpoints'), api('GET', '/trust-anchors')]);
  const byType = Object.fromEntries(list.map((e) => [e.type, e]));
  // Each configured endpoint's tag, sent back with its Save so that a change made meanwhile
  // (another operator, another replica) is refused instead of overwritten.
  const tags = Object.fromEntries(await Promise.all(list.map(async (e) => {
    try {
      return [e.type, (await getTagged(`/federation-endpoints/${seg(e.type)}`)).tag];
    } catch {
      return [e.type, null];
    }
  })));
  mount(view,
    h('h1', {}, 'Federation endpoints'),
    h('p', { class: 'muted' }, 'An enabled endpoint is served at its path and published in the Entity Configuration; disabling it unpublishes it at once (the old path keeps answering for one Entity Configuration lifetime).'),
    h('div', { class: 'grid2' }, TYPES.filter((t) => byType[t]).map((t) => card(t, byType[t], anchors, () => render(view), tags[t]))),
    h('h2', {}, 'Not configured'),
    TYPES.filter((t) => !byType[t]).map((t) => h('details', { class: 'panel' },
      h('summary', {}, `Enable ${t.replaceAll('_', ' ')}`), card(t, null, anchors, () => render(view)))));
}

function card(type, e, anchors, done, tag = null) {
  const enabled = !!e?.path;
  const path = h('input', { name: 'path', value: e?.path || `/${type.replaceAll('_', '-')}` });
  const url = h('input', { name: 'url', value: e?.url || '', placeholder: 'derived from the entity identifier' });
  const config = h('textarea', { name: 'config', rows: 3, value: e ? JSON.stringify(e.config ?? {}, null, 2) : '{}' });
  const auth = h('input', { name: 'auth_enabled', type: 'checkbox', checked: !!e?.auth_enabled });
  const tas = h('input', {
    name: 'auth_trust_anchors',
    value: (e?.auth_trust_anchors || []).map((t) => t.entity_id).join(', '),
    list: `anchors-${type}`,
  });
  const headingId = `ep-${type}`;
  const form = h('form', { class: e ? 'panel' : null, 'aria-labelledby': headingId, 'data-endpoint': type, novalidate: true },
    h('h2', { id: headingId }, h('code', {}, type), ' ',
      h('span', { class: `badge ${enabled ? 'active' : 'blocked'}` }, enabled ? 'enabled' : (e ? 'disabled' : 'not configured'))),
    field('Path', path),
    field('Published URL (optional)', url),
    field('Configuration (JSON)', config),
    field('Require client authentication (private_key_jwt)', auth),
    field('Trust anchors for client authentication', tas, 'Entity identifiers, comma-separated.'),
    h('datalist', { id: `anchors-${type}` }, anchors.map((a) => h('option', { value: a.entity_id }))),
    h('div', { class: 'actions' },
      h('button', { type: 'submit' }, enabled ? 'Save' : 'Enable'),
      enabled ? h('button', { type: 'button', class: 'danger', 'data-action': 'disable', 'aria-label': `Disable ${type}` }, 'Disable') : null));
  const body = (p) => ({
    type,
    path: p,
    url: url.value.trim() || null,
    auth_enabled: auth.checked,
    auth_trust_anchors: tas.value.split(',').map((s) => s.trim()).filter(Boolean),
    config: parseJson(config.value, 'config', {}),
  });
  const send = async (p) => {
    clearErrors(form);
    try {
      const b = body(p);
      if (e) await api('PUT', `/federation-endpoints/${seg(type)}`, b, { ifMatch: tag });
      else await api('POST', '/federation-endpoints', b);
      announce(`${type}: ${p ? `served at ${p}` : 'disabled'}`);
      await done();
    } catch (err) {
      showError(form, err, 'config', ALIASES);
    }
  };
  form.addEventListener('submit', (ev) => { ev.preventDefault(); send(path.value.trim()); });
  form.querySelector('[data-action="disable"]')?.addEventListener('click', () => send(null));
  return form;
}
