// Small DOM helpers. Text always goes in through textContent, never as HTML, so values from
// the federation (entity identifiers, descriptions, user agents) cannot inject markup.

let nextId = 0;
/** A page-unique element id. */
export const uid = (p = 'f') => `${p}-${++nextId}`;

/** Creates an element: attributes (`on*` functions become listeners), then children. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'value') el.value = v;
    else if (k === 'checked') el.checked = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces the content of `el`. */
export function mount(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/**
 * A labelled form control with a slot for the API's message about it. `control` is an
 * input/select/textarea element; its `name` is the API field the message will be matched to.
 */
export function field(label, control, hint) {
  const id = control.id || uid(control.name || 'f');
  control.id = id;
  const err = h('p', { class: 'error', id: `${id}-error` });
  const hintEl = hint ? h('p', { class: 'muted', id: `${id}-hint` }, hint) : null;
  control.setAttribute('aria-describedby', [hintEl && `${id}-hint`, `${id}-error`].filter(Boolean).join(' '));
  const box = h('div', { class: control.type === 'checkbox' ? 'field inline' : 'field' });
  if (control.type === 'checkbox') box.append(control, h('label', { for: id }, label));
  else box.append(h('label', { for: id }, label), control);
  if (hintEl) box.append(hintEl);
  box.append(err);
  return box;
}

/** Clears every field message of a form. */
export function clearErrors(form) {
  for (const e of form.querySelectorAll('.error')) e.textContent = '';
  for (const c of form.querySelectorAll('[aria-invalid]')) c.removeAttribute('aria-invalid');
}

/**
 * Shows an API error next to the field it concerns: the first field whose name (or an alias)
 * the message mentions, else `fallback`, else the form's own message slot. Focuses that field.
 */
export function showError(form, error, fallback, aliases = {}) {
  const msg = error?.message || String(error);
  const controls = [...form.querySelectorAll('[name]')];
  const lower = msg.toLowerCase();
  const mentions = (name) => [name, ...(aliases[name] || [])]
    .some((n) => new RegExp(`(^|[^a-z_])${n.toLowerCase()}([^a-z_]|$)`).test(lower));
  const target = controls.find((c) => mentions(c.name))
    || controls.find((c) => c.name === fallback);
  const slot = target ? form.querySelector(`#${CSS.escape(target.id)}-error`) : null;
  if (target && slot) {
    slot.textContent = msg;
    target.setAttribute('aria-invalid', 'true');
    target.focus();
  } else {
    const general = form.querySelector('.form-error') || form.appendChild(h('p', { class: 'error form-error', role: 'alert' }));
    general.textContent = msg;
  }
}

/** A table; `cols` are [header, cell(row) → node/text, {num}]. */
export function table(caption, cols, rows, empty = 'None.') {
  if (!rows.length) return h('p', { class: 'muted' }, empty);
  return h('table', {},
    h('caption', { class: 'muted' }, caption),
    h('thead', {}, h('tr', {}, cols.map(([t, , o]) => h('th', { scope: 'col', class: o?.num ? 'num' : null }, t)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, cols.map(([, f, o]) => h('td', { class: o?.num ? 'num' : null }, f(r)))))));
}

/** Unix seconds as a readable UTC time. */
export function time(secs) {
  if (secs === null || secs === undefined || secs === '') return '—';
  const d = new Date(Number(secs) * 1000);
  return Number.isNaN(d.getTime()) ? String(secs) : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}

/** A status word as a coloured badge (the colour is never the only cue: the word is shown). */
export const badge = (s) => h('span', { class: `badge ${s}` }, s);

/** Pretty JSON in a <pre>; nothing set reads as such, not as a raw `null`. */
export const json = (v, none = 'None set.') => (v === null || v === undefined
  ? h('p', { class: 'muted' }, none)
  : h('pre', {}, JSON.stringify(v, null, 2)));

/** A count with its noun: "1 trust anchor", "2 trust anchors". */
export const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** Announces a short message to everyone (the live region). */
export function announce(msg) {
  const s = document.getElementById('status');
  s.textContent = msg;
  clearTimeout(announce.t);
  announce.t = setTimeout(() => { s.textContent = ''; }, 4000);
}

/** A section with a heading. */
export const section = (title, ...body) => {
  const id = uid('s');
  return h('section', { 'aria-labelledby': id }, h('h2', { id }, title), ...body);
};

/** Parses a JSON textarea; empty → `empty`. Throws an Error naming the field. */
export function parseJson(text, name, empty = undefined) {
  if (!text.trim()) return empty;
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${name}: not valid JSON (${e.message})`);
  }
}

/**
 * Asks before a destructive action, in the page (a modal <dialog>, not the browser's
 * `confirm()`): resolves true only when the operator presses the confirming button. Escape
 * and "Cancel" resolve false. The question names what will happen, so it reads alone.
 */
export function confirmAction(question, confirmLabel) {
  return new Promise((resolve) => {
    const id = uid('confirm');
    const yes = h('button', { type: 'button', class: 'danger', 'data-confirm': 'yes' }, confirmLabel);
    const no = h('button', { type: 'button', class: 'secondary', 'data-confirm': 'no' }, 'Cancel');
    const dialog = h('dialog', { 'aria-labelledby': id, class: 'confirm' },
      h('p', { id }, question), h('div', { class: 'actions' }, yes, no));
    const done = (answer) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    yes.addEventListener('click', () => done(true));
    no.addEventListener('click', () => done(false));
    dialog.addEventListener('cancel', (e) => { e.preventDefault(); done(false); });
    document.body.append(dialog);
    dialog.showModal();
    no.focus();
  });
}
