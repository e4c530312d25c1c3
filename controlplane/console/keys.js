// Keys: the signing keys on a calendar (announced, signing, retiring, expired), the
// rotation policy that schedules the next one, an immediate rotation (optionally revoking the
// old keys), the signing algorithm and RSA key size, and the keys added through the API (add,
// change expiry, revoke).

import { api, getTagged } from './api.js';
import { announce, badge, clearErrors, confirmAction, field, h, mount, plural, section, showError, table, time } from './dom.js';
import { collection } from './collection.js';

const NS = 'http://www.w3.org/2000/svg';
const REASONS = ['unspecified', 'superseded', 'compromised'];

/**
 * A key's state at `now` (Unix seconds), in words (never colour alone): announced (published,
 * not signing yet), signing (the newest key in force), retiring (an older key that still
 * verifies until its expiry), expired, revoked.
 */
export function keyState(k, now, keys = [k]) {
  if (k.revoked) return 'revoked';
  if (k.exp && k.exp <= now) return 'expired';
  const start = (x) => x.nbf ?? x.iat ?? 0;
  if (start(k) > now) return 'announced';
  const inForce = keys.filter((x) => start(x) <= now && !(x.exp && x.exp <= now) && x.alg === k.alg);
  return inForce.every((x) => start(x) <= start(k)) ? 'signing' : 'retiring';
}

/** When the next automatic rotation happens: the newest key's start + the interval. */
export function nextRotation(keys, rotation) {
  if (!rotation?.enabled) return null;
  const newest = Math.max(0, ...keys.map((k) => k.nbf || k.iat || 0));
  return newest ? newest + rotation.interval : null;
}

export async function render(view) {
  const again = () => render(view);
  const [kms, jwks] = await Promise.all([api('GET', '/kms'), api('GET', '/entity-configuration/jwks')]);
  const now = Math.floor(Date.now() / 1000);
  const keys = jwks.keys || [];
  const next = nextRotation(keys, kms.rotation);
  const lead = kms.rotation?.key_announcement_lead_time;
  mount(view,
    h('h1', {}, 'Keys'),
    h('dl', { class: 'kv' },
      h('dt', {}, 'Key management'), h('dd', {}, `${kms.kms}, ${kms.alg}${kms.pending_alg ? ` (switching to ${kms.pending_alg} at ${time(kms.alg_change_at)})` : ''}`),
      h('dt', {}, 'Next rotation'), h('dd', { 'data-field': 'next-rotation' }, next ? time(next) : 'automatic rotation is off'),
      h('dt', {}, 'Announcement lead time'), h('dd', {}, lead ? `${lead} s before the switch` : 'derived from the Entity Configuration lifetime')),
    section('Calendar', calendar(keys, now, next),
      table(plural(keys.length, 'published key'), [
        ['Key id', (k) => h('code', {}, k.kid)],
        ['Algorithm', (k) => k.alg || k.kty],
        ['Valid from', (k) => time(k.nbf ?? k.iat)],
        ['Expires', (k) => (k.exp ? time(k.exp) : '—')],
        ['State', (k) => badge(keyState(k, now, keys))],
      ], keys, 'No key is published.')),
    section('Superiors', superiors()),
    section('Rotation', await rotationForm(again), rotateNow(again), algForm(kms, again)),
    section('Signing key size', rsaForm(kms, again)),
    await collection({
      title: 'Keys added through the API', noun: 'API-managed key', list: '/entity-configuration/keys',
      item: (k) => `/entity-configuration/keys/${encodeURIComponent(k.kid)}`, itemTemplate: '/entity-configuration/keys/{kid}',
      name: (k) => k.kid, removeLabel: 'Revoke', deleteQuery: () => '?revoke=true&reason=superseded', onChange: again,
      columns: [
        ['Key id', (k) => h('code', {}, k.kid)],
        ['Expires', (k) => (k.exp ? time(k.exp) : '—')],
        ['State', (k) => badge(keyState(k, now))],
      ],
    }));
}

const AGREEMENT = {
  in_step: ['active', 'publishes our keys'],
  stale: ['blocked', 'still publishes a key dropped here'],
  missing: ['blocked', 'does not publish our key yet'],
  stale_and_missing: ['blocked', 'publishes a dropped key, not our current one'],
  unreachable: ['pending', 'could not be asked'],
};

/**
 * Whether each superior publishes our keys in its statement about us, asked after the page is
 * drawn (one fetch per authority hint). A dropped key still published above us, or a key not
 * yet published, is shown in the alarm colour and in words.
 */
function superiors() {
  const box = h('div', { 'data-field': 'superiors', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Asking the superiors…'));
  api('GET', '/entity-configuration/superiors').then((list) => {
    mount(box, table(plural(list.length, 'superior'), [
      ['Superior', (s) => h('code', {}, s.superior)],
      ['Our keys', (s) => {
        const [cls, words] = AGREEMENT[s.agreement] || ['pending', s.agreement];
        return h('span', { class: `badge ${cls}`, 'data-agreement': s.agreement }, words);
      }],
      ['Details', (s) => [
        s.stale.length ? `Still published there: ${s.stale.join(', ')}. ` : '',
        s.missing.length ? `Not published there yet: ${s.missing.join(', ')}. ` : '',
        s.error || '',
        s.statement_expires ? `Its statement expires ${time(s.statement_expires)}.` : '',
      ].join('')],
    ], list, 'No authority hint: no superior publishes our keys.'));
  }).catch((e) => mount(box, h('p', { class: 'error', role: 'alert' }, e.message)));
  return box;
}

/** PUT /kms/rsa-key-len: the modulus of RSA keys generated from now on. */
function rsaForm(kms, done) {
  const bits = h('input', { name: 'rsa_key_len', inputmode: 'numeric', value: String(kms.rsa_key_len ?? '') });
  const form = h('form', { class: 'panel', 'aria-label': 'RSA key size', novalidate: true },
    field('RSA modulus of new keys (bits, 2048–16384)', bits, 'Used when the signing algorithm is RS* or PS*.'),
    h('button', { type: 'submit' }, 'Save key size'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      await api('PUT', '/kms/rsa-key-len', bits.value.trim(), { text: true });
      announce('Key size saved');
      await done();
    } catch (e) {
      showError(form, e, 'rsa_key_len', { rsa_key_len: ['rsa key length'] });
    }
  });
  return form;
}

/**
 * The keys as bars on a time axis from the earliest start to the latest end (or the next
 * rotation), with "now" and the next rotation marked. Drawn as SVG with a text equivalent:
 * each bar has a <title> and the table below lists the same dates.
 */
function calendar(keys, now, next) {
  if (!keys.length) return null;
  const starts = keys.map((k) => k.nbf ?? k.iat ?? now);
  const ends = keys.map((k) => k.exp ?? Math.max(now, next ?? now) + 86400);
  const t0 = Math.min(now, ...starts);
  const t1 = Math.max(now + 3600, next ?? 0, ...ends);
  const W = 900; const row = 26; const left = 150; const top = 24;
  const H = top + keys.length * row + 20;
  const x = (t) => left + ((t - t0) / (t1 - t0)) * (W - left - 10);
  const el = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const svg = el('svg', { viewBox: `0 0 ${W} ${H}`, class: 'plot', role: 'img', 'aria-label': `Key calendar from ${time(t0)} to ${time(t1)}`, 'data-plot': 'key-calendar' });
  keys.forEach((k, i) => {
    const y = top + i * row;
    const state = keyState(k, now, keys);
    svg.append(el('text', { x: 4, y: y + 16 }, (k.kid || '').slice(0, 20)));
    const bar = el('rect', {
      x: x(starts[i]), y: y + 4, width: Math.max(2, x(ends[i]) - x(starts[i])), height: row - 8,
      class: state === 'announced' ? 's2' : (state === 'signing' ? 's1' : 's3'), 'data-kid': k.kid, 'data-state': state,
    });
    bar.append(el('title', {}, `${k.kid}: ${state}, ${time(starts[i])} – ${k.exp ? time(k.exp) : 'no expiry'}`));
    svg.append(bar);
  });
  const mark = (t, label, cls) => {
    svg.append(el('line', { x1: x(t), x2: x(t), y1: 14, y2: H - 6, class: cls }));
    svg.append(el('text', { x: Math.min(x(t) + 3, W - 120), y: 12 }, label));
  };
  mark(now, 'now', 'axis');
  if (next) mark(next, 'next rotation', 'grid');
  return h('figure', {}, h('figcaption', {}, 'Key calendar'), svg,
    h('div', { class: 'legend' },
      h('span', {}, h('span', { class: 'swatch s1' }), 'signing'),
      h('span', {}, h('span', { class: 'swatch s3' }), 'retiring (verifies until it expires)'),
      h('span', {}, h('span', { class: 'swatch s2' }), 'announced (not yet signing)')));
}

async function rotationForm(done) {
  const { value: r, tag } = await getTagged('/keys/rotation');
  const enabled = h('input', { name: 'enabled', type: 'checkbox', checked: r.enabled });
  const interval = h('input', { name: 'interval', value: String(r.interval) });
  const overlap = h('input', { name: 'overlap', value: String(r.overlap) });
  const leadTime = h('input', { name: 'key_announcement_lead_time', value: String(r.key_announcement_lead_time) });
  const multiplier = h('input', { name: 'key_announcement_lead_time_ec_multiplier', inputmode: 'decimal', value: String(r.key_announcement_lead_time_ec_multiplier) });
  const form = h('form', { class: 'panel', 'aria-label': 'Rotation policy', novalidate: true },
    h('h3', {}, 'Automatic rotation'),
    field('Rotate keys automatically', enabled),
    field('Key lifetime', interval, 'Seconds, or a duration such as 168h.'),
    field('Overlap', overlap, 'How long the previous key keeps verifying after the switch.'),
    field('Announcement lead time', leadTime, '0 derives it from the Entity Configuration lifetime.'),
    field('Lead time as a multiple of the Entity Configuration lifetime', multiplier, '0: not used.'),
    h('button', { type: 'submit' }, 'Save rotation policy'));
  const duration = (v) => (/^\d+$/.test(v.trim()) ? Number(v.trim()) : v.trim());
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      const m = Number(multiplier.value.trim() || '0');
      if (Number.isNaN(m)) throw new Error('key_announcement_lead_time_ec_multiplier: a number');
      await api('PUT', '/keys/rotation', {
        enabled: enabled.checked,
        interval: duration(interval.value),
        overlap: duration(overlap.value),
        key_announcement_lead_time: duration(leadTime.value),
        key_announcement_lead_time_ec_multiplier: m,
      }, { ifMatch: tag });
      announce('Rotation policy saved');
      await done();
    } catch (e) {
      showError(form, e.status === 412 ? new Error('Changed by someone else after you opened it; nothing was saved. Reload the page.') : e, 'interval');
    }
  });
  return form;
}

function rotateNow(done) {
  const revoke = h('input', { name: 'revoke', type: 'checkbox' });
  const reason = h('select', { name: 'reason' }, REASONS.map((r) => h('option', { value: r }, r)));
  const form = h('form', { class: 'panel', 'aria-label': 'Rotate now', novalidate: true },
    h('h3', {}, 'Rotate now'),
    h('p', { class: 'muted' }, 'Every signing key is replaced at once; without revocation the old keys keep verifying for the overlap.'),
    field('Revoke the old keys', revoke), field('Reason', reason),
    h('button', { type: 'submit', class: 'danger' }, 'Rotate keys now'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const what = revoke.checked ? `Rotate and revoke the current keys (${reason.value})?` : 'Rotate the signing keys now?';
    if (!(await confirmAction(`${what} Relying parties that cached the old keys verify with the new ones after their next fetch.`, 'Rotate'))) return;
    try {
      const q = revoke.checked ? `?revoke=true&reason=${encodeURIComponent(reason.value)}` : '';
      await api('POST', `/kms/rotate${q}`);
      announce('Keys rotated');
      await done();
    } catch (e) {
      showError(form, e, 'reason');
    }
  });
  return form;
}

function algForm(kms, done) {
  const algs = kms.algorithms || [kms.alg];
  const alg = h('select', { name: 'alg' }, algs.map((a) => h('option', { value: a }, a)));
  alg.value = kms.pending_alg || kms.alg;
  const form = h('form', { class: 'panel', 'aria-label': 'Signing algorithm', novalidate: true },
    h('h3', {}, 'Signing algorithm'),
    field('Algorithm', alg, 'A key of the new algorithm is announced now and signs after the announcement lead time.'),
    h('button', { type: 'submit' }, 'Change algorithm'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    if (!(await confirmAction(`Switch signing to ${alg.value}?`, 'Switch'))) return;
    try {
      await api('PUT', '/kms/alg', alg.value, { text: true });
      announce(`Switching to ${alg.value}`);
      await done();
    } catch (e) {
      showError(form, e, 'alg');
    }
  });
  return form;
}
