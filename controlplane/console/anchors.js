// Trust anchors: the anchors this entity trusts (for resolving, client authentication and
// enrollment checks), with their keys: add, edit, remove; and the resolver's caches, flushed
// when an anchor changed something before its statements expire.

import { api, seg } from './api.js';
import { announce, clearErrors, field, h, mount, showError, time } from './dom.js';
import { collection } from './collection.js';

export async function render(view) {
  mount(view,
    h('h1', {}, 'Trust anchors'),
    await collection({
      title: 'Configured trust anchors', noun: 'trust anchor', list: '/trust-anchors',
      item: (t) => `/trust-anchors/${seg(t.entity_id)}`, itemTemplate: '/trust-anchors/{entityID}',
      name: (t) => t.entity_id,
      columns: [
        ['Entity identifier', (t) => t.entity_id],
        ['Key ids', (t) => (t.jwks?.keys || []).map((k) => k.kid).filter(Boolean).join(', ') || '—'],
        ['Keys polled', (t) => (t.enable_jwks_update ? 'yes' : 'no')],
        ['Updated', (t) => time(t.updated_at)],
      ],
    }),
    flushForm());
}

/** POST /resolver/flush: everything, or what concerns one subject. */
function flushForm() {
  const sub = h('input', { name: 'sub', type: 'url', placeholder: 'empty: everything' });
  const form = h('form', { class: 'panel', 'aria-label': 'Flush the resolver', novalidate: true },
    h('h2', {}, 'Resolver caches'),
    h('p', { class: 'muted' }, 'Forget the statements, resolutions and failures this process has cached, so the next resolve fetches anew.'),
    field('Only about this subject', sub),
    h('button', { type: 'submit', class: 'secondary' }, 'Flush'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      const r = await api('POST', '/resolver/flush', sub.value.trim() ? { sub: sub.value.trim() } : {});
      announce(`Flushed ${r?.flushed ?? ''}`);
    } catch (e) {
      showError(form, e, 'sub');
    }
  });
  return form;
}
