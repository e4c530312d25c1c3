// Trust anchors: the anchors this entity trusts (for resolving, client authentication and
// enrollment checks), with their keys; add and remove.

import { api, seg } from './api.js';
import { announce, clearErrors, field, h, mount, parseJson, plural, showError, table, time } from './dom.js';

export async function render(view) {
  const list = await api('GET', '/trust-anchors');
  const entity = h('input', { name: 'entity_id', type: 'url', required: true, placeholder: 'https://ta.example.org' });
  const jwks = h('textarea', { name: 'jwks', rows: 4, placeholder: '{"keys": [...]} (optional with key polling)' });
  const poll = h('input', { name: 'enable_jwks_update', type: 'checkbox' });
  const form = h('form', { class: 'panel', 'aria-label': 'New trust anchor', novalidate: true },
    h('h2', {}, 'New trust anchor'),
    field('Entity identifier', entity),
    field('JWKS', jwks),
    field('Fetch its keys from its Entity Configuration', poll),
    h('button', { type: 'submit' }, 'Add trust anchor'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      const body = { entity_id: entity.value.trim(), enable_jwks_update: poll.checked };
      const keys = parseJson(jwks.value, 'jwks');
      if (keys !== undefined) body.jwks = keys;
      await api('POST', '/trust-anchors', body);
      announce(`Added ${body.entity_id}`);
      await render(view);
    } catch (e) {
      showError(form, e, 'entity_id', { jwks: ['keys'] });
    }
  });
  mount(view,
    h('h1', {}, 'Trust anchors'),
    table(plural(list.length, 'trust anchor'), [
      ['Entity identifier', (t) => t.entity_id],
      ['Key ids', (t) => (t.jwks?.keys || []).map((k) => k.kid).filter(Boolean).join(', ') || '—'],
      ['Keys polled', (t) => (t.enable_jwks_update ? 'yes' : 'no')],
      ['Updated', (t) => time(t.updated_at)],
      ['Actions', (t) => h('button', {
        type: 'button', class: 'danger', 'aria-label': `Remove ${t.entity_id}`,
        onclick: async (ev) => {
          try {
            await api('DELETE', `/trust-anchors/${seg(t.entity_id)}`);
            announce(`Removed ${t.entity_id}`);
            await render(view);
          } catch (e) {
            ev.target.after(h('p', { class: 'error', role: 'alert' }, e.message));
          }
        },
      }, 'Remove')],
    ], list, 'No trust anchor configured.'),
    form);
}
