// Entity Configuration: what this entity says about itself — authority hints, the trust
// marks it holds, its metadata, additional claims and the statement's lifetime. Every change
// is republished at once; the page shows the signed document's current payload.

import { api, seg } from './api.js';
import { announce, clearErrors, confirmAction, field, h, mount, plural, section, showError, table, time } from './dom.js';
import { jsonEditor } from './editor.js';

export async function render(view) {
  const again = () => render(view);
  const [ec, hints, marks] = await Promise.all([
    api('GET', '/entity-configuration'),
    api('GET', '/entity-configuration/authority-hints'),
    api('GET', '/entity-configuration/trust-marks'),
  ]);
  const editors = await Promise.all([
    jsonEditor({ title: 'Metadata', path: '/entity-configuration/metadata', name: 'metadata', hint: 'Entity type → claims. The federation endpoints\' URLs are added by Pharos from the enabled endpoints.' }),
    jsonEditor({ title: 'Additional claims', path: '/entity-configuration/additional-claims', name: 'additional_claims', hint: 'A list of {"claim", "value", "crit"}; crit lists the claim in the statement\'s crit.' }),
  ]);
  mount(view,
    h('h1', {}, 'Entity Configuration'),
    h('dl', { class: 'kv' },
      h('dt', {}, 'Entity identifier'), h('dd', {}, h('code', {}, ec.sub)),
      h('dt', {}, 'Issued'), h('dd', {}, `${time(ec.iat)}, expires ${time(ec.exp)}`),
      h('dt', {}, 'Authority hints published'), h('dd', { 'data-field': 'published-hints' }, (ec.authority_hints || []).join(', ') || 'none')),
    section('Authority hints', table(plural(hints.length, 'authority hint'), [
      ['Superior', (x) => h('code', {}, x.entity_id)],
      ['Note', (x) => x.description || '—'],
      ['Actions', (x) => removeButton(`authority hint ${x.entity_id}`, `/entity-configuration/authority-hints/${seg(x.id)}`, again)],
    ], hints, 'No authority hint: this entity presents itself as a trust anchor.'), hintForm(again)),
    section('Trust marks held', table(plural(marks.length, 'trust mark'), [
      ['Type', (m) => h('code', {}, m.trust_mark_type)],
      ['Issuer', (m) => m.trust_mark_issuer || '—'],
      ['Refreshed by Pharos', (m) => (m.refresh ? 'yes' : 'no')],
      ['Actions', (m) => removeButton(`trust mark ${m.trust_mark_type}`, `/entity-configuration/trust-marks/${seg(m.id)}`, again)],
    ], marks, 'No trust mark is published.'), markForm(again)),
    section('Edit', h('div', { class: 'grid2' }, editors)),
    section('Lifetime', await lifetimeForm(again)));
}

/** A remove button with a confirmation naming what goes. */
function removeButton(what, path, done) {
  return h('button', {
    type: 'button', class: 'danger', 'aria-label': `Remove ${what}`,
    onclick: async (ev) => {
      const button = ev.currentTarget;
      if (!(await confirmAction(`Remove ${what}? The Entity Configuration is republished without it.`, 'Remove'))) return;
      try {
        await api('DELETE', path);
        announce(`Removed ${what}`);
        await done();
      } catch (e) {
        button.after(h('p', { class: 'error', role: 'alert' }, e.message));
      }
    },
  }, 'Remove');
}

function hintForm(done) {
  const entity = h('input', { name: 'entity_id', type: 'url', required: true, placeholder: 'https://ta.example.org' });
  const description = h('input', { name: 'description' });
  const form = h('form', { class: 'panel', 'aria-label': 'New authority hint', novalidate: true },
    h('h3', {}, 'New authority hint'),
    field('Superior\'s entity identifier', entity), field('Note', description),
    h('button', { type: 'submit' }, 'Add authority hint'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      await api('POST', '/entity-configuration/authority-hints', { entity_id: entity.value.trim(), description: description.value });
      announce(`Authority hint ${entity.value.trim()} added`);
      await done();
    } catch (e) {
      showError(form, e, 'entity_id');
    }
  });
  return form;
}

function markForm(done) {
  const type = h('input', { name: 'trust_mark_type', type: 'url', required: true });
  const issuer = h('input', { name: 'trust_mark_issuer', type: 'url' });
  const jwt = h('textarea', { name: 'trust_mark', rows: 3, spellcheck: 'false' });
  const refresh = h('input', { name: 'refresh', type: 'checkbox' });
  const form = h('form', { class: 'panel', 'aria-label': 'New trust mark', novalidate: true },
    h('h3', {}, 'Publish a trust mark'),
    field('Trust mark type', type), field('Issuer', issuer, 'Needed when Pharos fetches and refreshes the mark.'),
    field('Trust mark (JWT)', jwt, 'The signed mark, when you have it; otherwise let Pharos obtain it from the issuer.'),
    field('Obtain and refresh it from the issuer', refresh),
    h('button', { type: 'submit' }, 'Publish trust mark'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      const body = { trust_mark_type: type.value.trim(), refresh: refresh.checked };
      if (issuer.value.trim()) body.trust_mark_issuer = issuer.value.trim();
      if (jwt.value.trim()) body.trust_mark = jwt.value.trim();
      await api('POST', '/entity-configuration/trust-marks', body);
      announce(`Trust mark ${body.trust_mark_type} published`);
      await done();
    } catch (e) {
      showError(form, e, 'trust_mark_type');
    }
  });
  return form;
}

async function lifetimeForm(done) {
  const current = await api('GET', '/entity-configuration/lifetime');
  const seconds = h('input', { name: 'lifetime', inputmode: 'numeric', value: String(current) });
  const form = h('form', { class: 'panel', 'aria-label': 'Entity Configuration lifetime', novalidate: true },
    field('Lifetime of the Entity Configuration (seconds)', seconds),
    h('button', { type: 'submit' }, 'Save lifetime'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      const n = seconds.value.trim();
      if (!/^\d+$/.test(n)) throw new Error('lifetime: a whole number of seconds');
      await api('PUT', '/entity-configuration/lifetime', Number(n));
      announce('Lifetime saved');
      await done();
    } catch (e) {
      showError(form, e, 'lifetime');
    }
  });
  return form;
}
