// Trust marks: types (with owner and issuers), issuance specifications, their subjects (add
// one, or change its status), and the pending requests among them (approve or decline).

import { api, seg } from './api.js';
import { announce, badge, clearErrors, field, h, mount, plural, section, showError, table, time } from './dom.js';

export async function render(view) {
  const [types, specs] = await Promise.all([
    api('GET', '/trust-marks/types'),
    api('GET', '/trust-marks/issuance-spec'),
  ]);
  const subjects = await Promise.all(specs.map((s) =>
    api('GET', `/trust-marks/issuance-spec/${s.id}/subjects`).then((l) => l.map((x) => ({ ...x, spec: s })))));
  const all = subjects.flat();
  const pending = all.filter((x) => x.status === 'pending');
  const rerender = () => render(view);
  mount(view,
    h('h1', {}, 'Trust marks'),
    section('Pending requests', table(plural(pending.length, 'pending request'), [
      ['Trust mark type', (x) => x.spec.trust_mark_type],
      ['Subject', (x) => x.entity_id],
      ['Requested', (x) => time(x.created_at)],
      ['Actions', (x) => decide(x, ['active', 'Approve'], ['blocked', 'Decline'], rerender)],
    ], pending, 'No pending trust mark requests.')),
    section('Types', table(plural(types.length, 'trust mark type'), [
      ['Type', (t) => h('code', {}, t.trust_mark_type)],
      ['Description', (t) => t.description || '—'],
      ['Owner', (t) => t.owner?.entity_id || '—'],
      ['Issuers', (t) => t.issuers.map((i) => i.issuer).join(', ') || '—'],
    ], types, 'No trust mark type.'), typeForm(rerender)),
    section('Issuance specifications', table(plural(specs.length, 'specification'), [
      ['Trust mark type', (s) => h('code', {}, s.trust_mark_type)],
      ['Lifetime (s)', (s) => s.lifetime, { num: true }],
      ['Description', (s) => s.description || '—'],
      ['Subjects', (s) => all.filter((x) => x.spec.id === s.id).length, { num: true }],
    ], specs, 'No issuance specification.'), specForm(rerender)),
    section('Subjects', table(plural(all.length, 'subject'), [
      ['Trust mark type', (x) => x.spec.trust_mark_type],
      ['Subject', (x) => x.entity_id],
      ['Status', (x) => badge(x.status)],
      ['Updated', (x) => time(x.updated_at)],
      ['Actions', (x) => (x.status === 'active'
        ? decide(x, ['blocked', 'Revoke'], null, rerender)
        : decide(x, ['active', 'Activate'], null, rerender))],
    ], all, 'No subject.'), specs.length ? subjectForm(specs, rerender) : null));
}

/** Entitles a subject to the marks of one of the specifications (an active subject). */
function subjectForm(specs, done) {
  const spec = h('select', { name: 'trust_mark_type', required: true },
    specs.map((s) => h('option', { value: String(s.id) }, s.trust_mark_type)));
  const subject = h('input', { name: 'entity_id', type: 'url', required: true });
  const form = h('form', { class: 'panel', 'aria-label': 'New subject', novalidate: true },
    h('h3', {}, 'New subject'),
    field('Trust mark type', spec), field('Subject entity identifier', subject),
    h('button', { type: 'submit' }, 'Add subject'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      await api('POST', `/trust-marks/issuance-spec/${spec.value}/subjects`, { entity_id: subject.value.trim() });
      announce(`${subject.value.trim()} may now obtain the trust mark`);
      await done();
    } catch (e) {
      showError(form, e, 'entity_id');
    }
  });
  return form;
}

function decide(x, yes, no, done) {
  const button = ([to, label]) => h('button', {
    type: 'button', class: to === 'blocked' ? 'danger' : null,
    'aria-label': `${label} ${x.entity_id} for ${x.spec.trust_mark_type}`,
    onclick: async (ev) => {
      try {
        await api('PUT', `/trust-marks/issuance-spec/${x.spec.id}/subjects/${seg(x.id)}/status`, to, { text: true });
        announce(`${x.entity_id}: ${to}`);
        await done();
      } catch (e) {
        ev.target.after(h('p', { class: 'error', role: 'alert' }, e.message));
      }
    },
  }, label);
  return h('div', { class: 'actions' }, button(yes), no ? button(no) : null);
}

function typeForm(done) {
  const type = h('input', { name: 'trust_mark_type', type: 'url', required: true });
  const description = h('input', { name: 'description' });
  const form = h('form', { class: 'panel', 'aria-label': 'New trust mark type', novalidate: true },
    h('h3', {}, 'New trust mark type'),
    field('Trust mark type identifier', type), field('Description', description),
    h('button', { type: 'submit' }, 'Add type'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      await api('POST', '/trust-marks/types', { trust_mark_type: type.value.trim(), description: description.value });
      announce('Trust mark type added');
      await done();
    } catch (e) {
      showError(form, e, 'trust_mark_type');
    }
  });
  return form;
}

function specForm(done) {
  const type = h('input', { name: 'trust_mark_type', type: 'url', required: true });
  const lifetime = h('input', { name: 'lifetime', inputmode: 'numeric', placeholder: '86400' });
  const description = h('input', { name: 'description' });
  const form = h('form', { class: 'panel', 'aria-label': 'New issuance specification', novalidate: true },
    h('h3', {}, 'New issuance specification'),
    field('Trust mark type', type), field('Lifetime (seconds or e.g. 24h)', lifetime),
    field('Description', description),
    h('button', { type: 'submit' }, 'Add specification'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      const body = { trust_mark_type: type.value.trim(), description: description.value };
      if (lifetime.value.trim()) body.lifetime = /^\d+$/.test(lifetime.value.trim()) ? Number(lifetime.value) : lifetime.value.trim();
      await api('POST', '/trust-marks/issuance-spec', body);
      announce('Issuance specification added');
      await done();
    } catch (e) {
      showError(form, e, 'trust_mark_type');
    }
  });
  return form;
}
