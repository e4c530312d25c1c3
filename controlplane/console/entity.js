// Entity Configuration: what this entity says about itself — authority hints, the trust
// marks it holds, its metadata, additional claims and the statement's lifetime. Every change
// is republished at once; the page shows the signed document's current payload.

import { api } from './api.js';
import { h, mount, section, time } from './dom.js';
import { collection } from './collection.js';
import { jsonEditor } from './editor.js';

export async function render(view) {
  const ec = await api('GET', '/entity-configuration');
  const published = h('dd', { 'data-field': 'published-hints' }, (ec.authority_hints || []).join(', ') || 'none');
  const issued = h('dd', {}, `${time(ec.iat)}, expires ${time(ec.exp)}`);
  // After each change the signed document is read again: what the page says is published is.
  const republished = async () => {
    const now = await api('GET', '/entity-configuration');
    published.textContent = (now.authority_hints || []).join(', ') || 'none';
    issued.textContent = `${time(now.iat)}, expires ${time(now.exp)}`;
  };
  const [hints, marks, ...editors] = await Promise.all([
    collection({
      title: 'Authority hints', noun: 'authority hint', list: '/entity-configuration/authority-hints',
      item: (x) => `/entity-configuration/authority-hints/${x.id}`, itemTemplate: '/entity-configuration/authority-hints/{id}',
      name: (x) => x.entity_id, onChange: republished,
      columns: [['Superior', (x) => h('code', {}, x.entity_id)], ['Note', (x) => x.description || '—']],
    }),
    collection({
      title: 'Trust marks held', noun: 'trust mark', list: '/entity-configuration/trust-marks',
      item: (m) => `/entity-configuration/trust-marks/${m.id}`, itemTemplate: '/entity-configuration/trust-marks/{id}',
      name: (m) => m.trust_mark_type, onChange: republished,
      columns: [
        ['Type', (m) => h('code', {}, m.trust_mark_type)],
        ['Issuer', (m) => m.trust_mark_issuer || '—'],
        ['Refreshed by Pharos', (m) => (m.refresh ? 'yes' : 'no')],
      ],
    }),
    jsonEditor({ title: 'Metadata', path: '/entity-configuration/metadata', name: 'metadata', hint: 'Entity type → claims. The federation endpoints\' URLs are added by Pharos from the enabled endpoints.', onSaved: republished }),
    jsonEditor({ title: 'Additional claims', path: '/entity-configuration/additional-claims', name: 'additional_claims', hint: 'A list of {"claim", "value", "crit"}; crit lists the claim in the statement\'s crit.', onSaved: republished }),
    jsonEditor({ title: 'Lifetime', path: '/entity-configuration/lifetime', name: 'lifetime', hint: 'Seconds from issuance to expiry of the Entity Configuration.', onSaved: republished }),
  ]);
  mount(view,
    h('h1', {}, 'Entity Configuration'),
    h('dl', { class: 'kv' },
      h('dt', {}, 'Entity identifier'), h('dd', {}, h('code', {}, ec.sub)),
      h('dt', {}, 'Issued'), issued,
      h('dt', {}, 'Authority hints published'), published),
    hints, marks,
    section('Edit', h('div', { class: 'grid2' }, editors)));
}
