// Trust marks: types (with owner and issuers), issuance specifications, their subjects (add,
// edit, delete, or change the status of one), the pending requests among them (approve or
// decline), owners and issuers; each added, edited and deleted here.

import { api, getTagged, seg } from './api.js';
import { announce, badge, clearErrors, confirmAction, field, h, mount, plural, section, showError, table, time } from './dom.js';
import { collection, schemaForm } from './collection.js';
import { openapi, requestSchema, schemaFields } from './schema.js';

export async function render(view) {
  const [specs, doc] = await Promise.all([api('GET', '/trust-marks/issuance-spec'), openapi()]);
  const subjects = await Promise.all(specs.map((s) =>
    api('GET', `/trust-marks/issuance-spec/${s.id}/subjects`).then((l) => l.map((x) => ({ ...x, spec: s })))));
  const all = subjects.flat();
  const pending = all.filter((x) => x.status === 'pending');
  const rerender = () => render(view);
  const subjectPath = (x) => `/trust-marks/issuance-spec/${x.spec.id}/subjects/${seg(x.id)}`;
  const subjectSchema = requestSchema(doc, 'PUT', '/trust-marks/issuance-spec/{trustMarkSpecID}/subjects/{subjectID}');
  const [types, specList, owners, issuers] = await Promise.all([
    collection({
      title: 'Types', noun: 'trust mark type', list: '/trust-marks/types',
      item: (t) => `/trust-marks/types/${t.id}`, itemTemplate: '/trust-marks/types/{trustMarkTypeID}',
      name: (t) => t.trust_mark_type, onChange: rerender,
      columns: [
        ['Type', (t) => h('code', {}, t.trust_mark_type)],
        ['Description', (t) => t.description || '—'],
        ['Owner', (t) => t.owner?.entity_id || '—'],
        ['Issuers', (t) => t.issuers.map((i) => i.issuer).join(', ') || '—'],
      ],
    }),
    collection({
      title: 'Issuance specifications', noun: 'specification', list: '/trust-marks/issuance-spec',
      item: (s) => `/trust-marks/issuance-spec/${s.id}`, itemTemplate: '/trust-marks/issuance-spec/{trustMarkSpecID}',
      name: (s) => s.trust_mark_type, onChange: rerender,
      columns: [
        ['Trust mark type', (s) => h('code', {}, s.trust_mark_type)],
        ['Lifetime (s)', (s) => s.lifetime, { num: true }],
        ['Description', (s) => s.description || '—'],
        ['Subjects', (s) => all.filter((x) => x.spec.id === s.id).length, { num: true }],
      ],
    }),
    collection({
      title: 'Owners', noun: 'owner', list: '/trust-marks/owners',
      item: (o) => `/trust-marks/owners/${o.id}`, itemTemplate: '/trust-marks/owners/{ownerID}',
      name: (o) => o.entity_id,
      columns: [
        ['Owner', (o) => h('code', {}, o.entity_id)],
        ['Description', (o) => o.description || '—'],
        ['Types', (o) => (o.types || []).map((t) => t.trust_mark_type ?? t).join(', ') || '—'],
      ],
    }),
    collection({
      title: 'Issuers', noun: 'issuer', list: '/trust-marks/issuers',
      item: (i) => `/trust-marks/issuers/${i.id}`, itemTemplate: '/trust-marks/issuers/{issuerID}',
      name: (i) => i.issuer,
      columns: [
        ['Issuer', (i) => h('code', {}, i.issuer)],
        ['Description', (i) => i.description || '—'],
        ['Types', (i) => (i.types || []).map((t) => t.trust_mark_type ?? t).join(', ') || '—'],
      ],
    }),
  ]);
  mount(view,
    h('h1', {}, 'Trust marks'),
    section('Pending requests', table(plural(pending.length, 'pending request'), [
      ['Trust mark type', (x) => x.spec.trust_mark_type],
      ['Subject', (x) => x.entity_id],
      ['Requested', (x) => time(x.created_at)],
      ['Actions', (x) => decide(x, ['active', 'Approve'], ['blocked', 'Decline'], rerender)],
    ], pending, 'No pending trust mark requests.')),
    types, specList,
    section('Subjects', table(plural(all.length, 'subject'), [
      ['Trust mark type', (x) => x.spec.trust_mark_type],
      ['Subject', (x) => x.entity_id],
      ['Status', (x) => badge(x.status)],
      ['Updated', (x) => time(x.updated_at)],
      ['Actions', (x) => h('div', { class: 'actions' },
        x.status === 'active'
          ? decide(x, ['blocked', 'Revoke'], null, rerender)
          : decide(x, ['active', 'Activate'], null, rerender),
        subjectSchema ? subjectEdit(doc, subjectSchema, x, subjectPath(x), rerender) : null,
        h('button', {
          type: 'button', class: 'danger', 'aria-label': `Delete ${x.entity_id} for ${x.spec.trust_mark_type}`,
          onclick: async (ev) => {
            const button = ev.currentTarget;
            if (!(await confirmAction(`Delete ${x.entity_id} from ${x.spec.trust_mark_type}? It can no longer obtain the mark; marks already issued stay valid until they expire unless revoked first.`, 'Delete'))) return;
            try {
              await api('DELETE', subjectPath(x));
              announce(`Deleted ${x.entity_id}`);
              await rerender();
            } catch (e) {
              button.after(h('p', { class: 'error', role: 'alert' }, e.message));
            }
          },
        }, 'Delete'))],
    ], all, 'No subject.'), specs.length ? subjectForm(doc, specs, rerender) : null),
    owners, issuers);
}

/**
 * Entitles a subject to the marks of one of the specifications (active unless another status
 * is given); the body's fields are generated from the API's schema.
 */
function subjectForm(doc, specs, done) {
  const spec = h('select', { name: 'trust_mark_type', required: true },
    specs.map((s) => h('option', { value: String(s.id) }, s.trust_mark_type)));
  const schema = requestSchema(doc, 'POST', '/trust-marks/issuance-spec/{trustMarkSpecID}/subjects');
  const { fields, read } = schemaFields(doc, schema);
  const form = h('form', { class: 'panel', 'aria-label': 'New subject', novalidate: true },
    h('h3', {}, 'New subject'),
    field('Trust mark type', spec), fields,
    h('button', { type: 'submit' }, 'Add subject'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      const body = read();
      await api('POST', `/trust-marks/issuance-spec/${spec.value}/subjects`, body);
      announce(`${body.entity_id ?? 'The subject'} may now obtain the trust mark`);
      await done();
    } catch (e) {
      showError(form, e, 'entity_id');
    }
  });
  return form;
}

/** Edit of one subject, filled from and saved against the subject as read when opened (If-Match). */
function subjectEdit(doc, schema, x, path, done) {
  const label = `Edit ${x.entity_id} for ${x.spec.trust_mark_type}`;
  const details = h('details', { class: 'inline-edit' }, h('summary', { 'aria-label': label }, 'Edit'));
  details.addEventListener('toggle', async () => {
    if (!details.open || details.querySelector('form')) return;
    try {
      const { value, tag } = await getTagged(path);
      details.append(schemaForm(doc, {
        label, schema, values: value, submit: 'Save', omit: ['entity_id'],
        send: async (body) => {
          await api('PUT', path, body, { ifMatch: tag });
          announce(`Saved ${x.entity_id}`);
          await done();
        },
      }));
    } catch (e) {
      details.append(h('p', { class: 'error', role: 'alert' }, e.message));
    }
  });
  return details;
}

function decide(x, yes, no, done) {
  const button = ([to, label]) => h('button', {
    type: 'button', class: to === 'blocked' ? 'danger' : null,
    'aria-label': `${label} ${x.entity_id} for ${x.spec.trust_mark_type}`,
    onclick: async (ev) => {
      const target = ev.currentTarget;
      // Revoking an active subject's marks is destructive; declining a request is not.
      if (x.status === 'active' && to === 'blocked' && !(await confirmAction(
        `${label} the trust mark ${x.spec.trust_mark_type} of ${x.entity_id}? Its status answers revoked from now on.`, label))) return;
      try {
        await api('PUT', `/trust-marks/issuance-spec/${x.spec.id}/subjects/${seg(x.id)}/status`, to, { text: true });
        announce(`${x.entity_id}: ${to}`);
        await done();
      } catch (e) {
        target.after(h('p', { class: 'error', role: 'alert' }, e.message));
      }
    },
  }, label);
  return h('div', { class: 'actions' }, button(yes), no ? button(no) : null);
}
