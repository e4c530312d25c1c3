// A JSON document of the Admin API edited as text (metadata, policies, constraints, claims):
// read with its entity tag and written back with If-Match, so an edit someone else made in
// the meantime is refused (412) and shown, never silently overwritten.

import { api, getTagged } from './api.js';
import { announce, clearErrors, confirmAction, field, h, parseJson, showError } from './dom.js';

/**
 * A form editing the document at `path` (GET, PUT, and DELETE when `remove`). `name` is the
 * field's name (the API's messages are matched to it); a document that does not exist yet
 * (404) reads as empty. `onSaved` runs after each successful change.
 */
export async function jsonEditor({ title, path, name, hint, remove = false, onSaved = async () => {} }) {
  const text = h('textarea', { name, rows: 10, spellcheck: 'false' });
  const state = h('p', { class: 'muted tag' });
  const form = h('form', { class: 'panel editor', 'aria-label': title, novalidate: true, 'data-editor': name });
  let tag = null;
  const load = async () => {
    try {
      const r = await getTagged(path);
      tag = r.tag;
      text.value = r.value === null || r.value === '' ? '' : JSON.stringify(r.value, null, 2);
      state.textContent = '';
    } catch (e) {
      if (e.status !== 404) throw e;
      tag = null;
      text.value = '';
      state.textContent = 'Not set.';
    }
  };
  await load();
  const reload = h('button', {
    type: 'button', class: 'secondary', hidden: true,
    onclick: async () => { clearErrors(form); reload.hidden = true; await load(); },
  }, 'Load the current version');
  const del = remove ? h('button', {
    type: 'button', class: 'danger',
    onclick: async () => {
      clearErrors(form);
      if (!(await confirmAction(`Delete ${title.toLowerCase()}? It is published without it from now on.`, 'Delete'))) return;
      try {
        await api('DELETE', path, undefined, { ifMatch: tag });
        announce(`${title}: deleted`);
        await load();
        await onSaved();
      } catch (e) {
        failed(e);
      }
    },
  }, 'Delete') : null;
  const failed = (e) => {
    if (e.status === 412) {
      showError(form, new Error(`${title} was changed by someone else after you opened it; nothing was saved. Load the current version and apply your change again.`), name);
      reload.hidden = false;
    } else {
      showError(form, e, name);
    }
  };
  form.append(h('h3', {}, title), field(title, text, hint), state,
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Save'), del, reload));
  // Busy (aria-busy) from the request until the page around it has caught up (`onSaved`).
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    form.setAttribute('aria-busy', 'true');
    try {
      const body = parseJson(text.value, name);
      if (body === undefined) throw new Error(`${name}: enter a JSON document${remove ? ', or use Delete' : ''}`);
      await api('PUT', path, body, { ifMatch: tag });
      announce(`${title}: saved`);
      await load();
      await onSaved();
    } catch (e) {
      failed(e);
    } finally {
      form.removeAttribute('aria-busy');
    }
  });
  return form;
}
