// The chain explainer (issue 40): resolve an entity as this entity's resolver would and show
// every step (GET /explain): the statements fetched, the constraints checked, the metadata
// policies merged level by level, the superior's metadata claim, each policy operator's
// effect (before → after), the trust marks kept or dropped, and the failing step in words.
//
// Everything shown comes from other entities' statements: it goes in as text (dom.js `h`
// uses text nodes), URLs are shown, never linked or loaded.

import { api, seg } from './api.js';
import { announce, field, h, mount, section, table, time } from './dom.js';

const TYPES = ['', 'openid_relying_party', 'openid_provider', 'federation_entity',
  'oauth_authorization_server', 'oauth_client', 'oauth_resource'];

/** `#/explain` or `#/explain/<subject>[/<anchor>]`: the form, and the explanation when given. */
export async function render(view, params = []) {
  let anchors = [];
  try {
    anchors = await api('GET', '/trust-anchors');
  } catch {
    anchors = [];
  }
  const sub = h('input', { name: 'sub', required: true, value: params[0] || '', placeholder: 'https://rp.example.org', spellcheck: 'false', autocomplete: 'off' });
  const anchor = h('input', { name: 'anchor', value: params[1] || '', list: 'explain-anchors', spellcheck: 'false', autocomplete: 'off' });
  const type = h('select', { name: 'entity_type' },
    TYPES.map((t) => h('option', { value: t }, t || 'All entity types')));
  const out = h('div', { id: 'explanation' });
  const form = h('form', { class: 'panel', 'aria-labelledby': 'explain-form', novalidate: true },
    h('h2', { id: 'explain-form' }, 'Entity to explain'),
    field('Subject (entity identifier)', sub),
    field('Trust anchor (optional)', anchor, 'Default: every trust anchor the resolve endpoint accepts.'),
    h('datalist', { id: 'explain-anchors' }, anchors.map((a) => h('option', { value: a.entity_id }))),
    field('Entity type', type),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Explain')));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    run(form, out, sub.value.trim(), anchor.value.trim(), type.value);
  });
  mount(view,
    h('h1', {}, 'Chain explainer'),
    h('p', { class: 'muted' }, 'Resolves an entity as this entity\'s resolver does and shows every step: each statement, each constraint, each metadata policy merged, the superior\'s metadata, each policy operator\'s effect and each trust mark.'),
    form, out);
  if (params[0]) await run(form, out, sub.value.trim(), anchor.value.trim(), type.value);
}

async function run(form, out, sub, anchor, type) {
  const slot = form.querySelector('#' + CSS.escape(form.querySelector('[name=sub]').id) + '-error');
  slot.textContent = '';
  if (!sub) {
    slot.textContent = 'Enter the subject\'s entity identifier.';
    return;
  }
  let q = `/explain?sub=${seg(sub)}`;
  if (anchor) q += `&anchor=${seg(anchor)}`;
  if (type) q += `&entity_type=${seg(type)}`;
  mount(out, h('p', { class: 'muted' }, 'Resolving…'));
  out.setAttribute('aria-busy', 'true');
  try {
    const x = await api('GET', q);
    mount(out, ...explanation(x));
    announce(x.failed ? 'The chain does not resolve: see the failing step.' : 'The chain resolves.');
  } catch (e) {
    mount(out, h('p', { class: 'error', role: 'alert' }, e.message));
  }
  out.removeAttribute('aria-busy');
}

/**
 * Pretty JSON in a <pre> that the keyboard can reach and scroll (long metadata scrolls), with
 * a name for screen readers; nothing set reads as such.
 */
const json = (v, label, none = 'None set.') => (v === null || v === undefined
  ? h('p', { class: 'muted' }, none)
  : h('pre', { tabindex: 0, role: 'region', 'aria-label': label }, JSON.stringify(v, null, 2)));

/** A JSON value inline (absent parameters read as such). */
const val = (v) => (v === undefined || v === null ? h('span', { class: 'muted' }, 'absent') : h('code', {}, JSON.stringify(v)));

/** The explanation, step by step. */
export function explanation(x) {
  const parts = [summary(x)];
  if ((x.collection || []).length) {
    parts.push(section('Paths that ended while collecting chains',
      h('ul', {}, x.collection.map((n) => h('li', {}, n)))));
  }
  const st = x.statements || [];
  if (st.length) {
    parts.push(section('1. Statements fetched (subject first)', table('Each statement of the chain explained', [
      ['#', (s) => String(s.position), { num: true }],
      ['Kind', (s) => (s.kind === 'entity_configuration' ? 'Entity Configuration' : 'Subordinate Statement')],
      ['Issuer', (s) => h('code', {}, s.iss ?? '?')],
      ['Subject', (s) => h('code', {}, s.sub ?? '?')],
      ['Signing key (kid)', (s) => h('code', {}, s.kid ?? '?')],
      ['Expires', (s) => time(s.exp)],
      ['Checked', (s) => (s.problem ? h('span', { class: 'error' }, `Refused: ${s.problem}`)
        : s.signature ? `Signature ${s.signature}` : h('span', { class: 'muted' }, 'Signature not checked'))],
    ], st)));
    const signed = st.every((s) => s.signature);
    parts.push(section('2. Constraints checked', !signed
      ? h('p', { class: 'muted' }, 'Not reached: validation stopped before the constraints.')
      : table('Each constraint of each superior', [
        ['Statement', (c) => String(c.statement), { num: true }],
        ['Issuer', (c) => h('code', {}, c.issuer)],
        ['Constraint', (c) => c.constraint],
        ['Value', (c) => val(c.value)],
        ['Checked against', (c) => c.checked],
        ['Result', (c) => (c.ok ? h('span', { class: 'badge active' }, 'holds') : h('span', { class: 'badge blocked' }, 'violated'))],
      ], x.constraints || [], 'No statement of the chain carries constraints.')));
  }
  const p = x.policy;
  if (p) {
    parts.push(section('3. Metadata policies merged, from the trust anchor down',
      p.merges.length ? h('ol', {}, p.merges.map((m) => h('li', {},
        h('p', {}, `Policy of statement ${m.statement} (issued by `, h('code', {}, issuer(x, m.statement)), '):'),
        json(m.policy, `Policy of statement ${m.statement}`),
        m.combined ? [h('p', {}, 'Combined policy after it:'), json(m.combined, `Combined policy after statement ${m.statement}`)]
          : h('p', { class: 'error' }, 'Merge failed: see the failing step.'))))
        : h('p', { class: 'muted' }, 'No statement of the chain carries a metadata policy.')));
    parts.push(section('4. The subject\'s own metadata', json(p.subject_metadata, 'The subject\'s own metadata', 'None.')));
    parts.push(section('5. The immediate superior\'s metadata, applied before the policy',
      p.superior_metadata
        ? [h('p', {}, 'Claim in the immediate superior\'s statement:'), json(p.superior_metadata.claim, 'The immediate superior\'s metadata claim'),
          h('p', {}, 'Metadata after it:'), json(p.superior_metadata.after, 'Metadata after the superior\'s claim')]
        : h('p', { class: 'muted' }, 'The immediate superior\'s statement has no metadata claim.'),
      (p.entity_type_filters || []).map((f) => h('p', {},
        `allowed_entity_types of statement ${f.statement}: `, val(f.allowed),
        ` — removed: ${f.removed.length ? f.removed.join(', ') : 'none'}`))));
    parts.push(section('6. The merged policy applied, claim by claim', table('Each operator, in application order', [
      ['Parameter', (s) => h('code', {}, `metadata.${s.entity_type}.${s.parameter}`)],
      ['Operator', (s) => s.operator],
      ['Operator value', (s) => val(s.operand)],
      ['Before', (s) => val(s.before)],
      ['After', (s) => (s.error ? h('span', { class: 'error' }, `Refused: ${s.error}`) : val(s.after))],
      ['Effect', (s) => (s.error ? 'refused' : JSON.stringify(s.before) === JSON.stringify(s.after) ? 'unchanged' : 'changed')],
    ], p.operators, 'No operator applies to the subject\'s metadata.')));
  }
  if (x.metadata) {
    parts.push(section('7. Resolved metadata (what resolve returns)', json(x.metadata, 'Resolved metadata'),
      h('p', { class: 'muted' }, `The chain expires ${time(x.exp)}.`)));
  }
  if (!x.failed) {
    parts.push(section('8. Trust marks', table('Each trust mark of the subject', [
      ['Type', (m) => h('code', {}, m.trust_mark_type ?? '?')],
      ['Issuer', (m) => h('code', {}, m.issuer ?? '?')],
      ['Outcome', (m) => (m.kept ? h('span', { class: 'badge active' }, 'kept') : h('span', { class: 'badge blocked' }, 'dropped'))],
      ['Why', (m) => m.reason],
    ], x.trust_marks || [], 'The subject shows no trust marks.')));
  }
  if ((x.other_chains || []).length) {
    parts.push(section('Other chains found', h('ul', {}, x.other_chains.map((c) => h('li', {},
      'Towards ', h('code', {}, c.trust_anchor), `: ${c.outcome}`)))));
  }
  return parts;
}

/** The issuer of statement `n`. */
const issuer = (x, n) => (x.statements || []).find((s) => s.position === n)?.iss ?? '?';

/** Resolved or not, in words first (the colour only repeats them). */
function summary(x) {
  const towards = (x.trust_anchors || []).join(', ') || 'no trust anchor';
  if (!x.failed) {
    return h('section', { class: 'panel', 'aria-labelledby': 'explain-result', 'data-result': 'resolved' },
      h('h2', { id: 'explain-result' }, h('span', { class: 'badge active' }, 'Resolves'), ' ', h('code', {}, x.subject)),
      h('p', {}, 'Resolved towards ', h('code', {}, x.trust_anchor ?? towards), '.'));
  }
  return h('section', { class: 'panel', 'aria-labelledby': 'explain-result', 'data-result': 'failed', role: 'alert' },
    h('h2', { id: 'explain-result' }, h('span', { class: 'badge blocked' }, 'Does not resolve'), ' ', h('code', {}, x.subject)),
    h('dl', {},
      h('dt', {}, 'Failing step'), h('dd', { 'data-failed': 'step' }, x.failed.step),
      h('dt', {}, 'Rule'), h('dd', {}, x.failed.rule),
      h('dt', {}, 'What was wrong'), h('dd', { class: 'error' }, x.failed.message)),
    h('p', { class: 'muted' }, 'Towards ', h('code', {}, towards), '.'));
}
