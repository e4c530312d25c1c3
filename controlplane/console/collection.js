// A collection of the Admin API managed in the page: its rows in a table, each with Edit (a
// form generated from the item's PUT or PATCH schema, filled with the row) and Delete (after a
// confirmation), and an Add form generated from the collection's POST schema.

import { api, getTagged } from './api.js';
import { announce, clearErrors, confirmAction, h, mount, plural, showError, table } from './dom.js';
import { openapi, requestSchema, schemaFields } from './schema.js';

/**
 * opts:
 *  - title, noun (singular, for captions and messages)
 *  - list: the collection path as called (GET, POST); listTemplate: its documented template
 *  - item(row): the item's path as called; itemTemplate: its documented template
 *  - name(row): how a row is named in messages and labels
 *  - columns: table columns ([header, cell(row)])
 *  - edit: 'PUT' | 'PATCH' | null; remove: true | false; add: true | false
 *  - deleteQuery(row): a query string the DELETE needs (e.g. a confirmation)
 *  - omit: properties the forms leave out
 *  - rows(answer): the rows of the list answer (default: the answer)
 *  - removeLabel: the delete button's word (default Delete); onChange: runs after each change
 */
export async function collection(opts) {
  const {
    title, noun, list, listTemplate = list, item, itemTemplate, name, columns,
    edit = 'PUT', remove = true, add = true, deleteQuery = () => '', omit = [], rows = (x) => x,
    removeLabel = 'Delete', onChange = async () => {},
  } = opts;
  const doc = await openapi();
  const box = h('section', { 'data-collection': listTemplate, 'aria-label': title });
  const draw = async () => {
    const all = rows(await api('GET', list)) || [];
    const actions = (row) => h('div', { class: 'actions' },
      edit ? editButton(row) : null,
      remove ? h('button', {
        type: 'button', class: 'danger', 'aria-label': `${removeLabel} ${noun} ${name(row)}`,
        onclick: async (ev) => {
          const button = ev.currentTarget;
          if (!(await confirmAction(`${removeLabel} ${noun} ${name(row)}?`, removeLabel))) return;
          try {
            await api('DELETE', `${item(row)}${deleteQuery(row)}`);
            announce(`${removeLabel}: ${noun} ${name(row)}`);
            await draw();
            await onChange();
          } catch (e) {
            button.after(h('p', { class: 'error', role: 'alert' }, e.message));
          }
        },
      }, removeLabel) : null);
    // The edit form is filled from the item as read when it is opened, and saved with its
    // entity tag: an edit made meanwhile by someone else is refused (412), not overwritten.
    const editButton = (row) => {
      const schema = requestSchema(doc, edit, itemTemplate);
      if (!schema) return null;
      const details = h('details', { class: 'inline-edit' },
        h('summary', { 'aria-label': `Edit ${noun} ${name(row)}` }, 'Edit'));
      details.addEventListener('toggle', async () => {
        if (!details.open || details.querySelector('form')) return;
        try {
          const { value, tag } = await getTagged(item(row));
          details.append(form(`Edit ${noun} ${name(row)}`, schema, value ?? row, 'Save', async (body) => {
            try {
              await api(edit, item(row), body, { ifMatch: tag });
            } catch (e) {
              if (e.status === 412) throw new Error(`${noun} ${name(row)} was changed by someone else after you opened it; nothing was saved. Close and open Edit again.`);
              throw e;
            }
            announce(`Saved ${noun} ${name(row)}`);
            await draw();
            await onChange();
          }));
        } catch (e) {
          details.append(h('p', { class: 'error', role: 'alert' }, e.message));
        }
      });
      return details;
    };
    const addSchema = add ? requestSchema(doc, 'POST', listTemplate) : null;
    mount(box,
      h('h2', {}, title),
      table(plural(all.length, noun), [...columns, ['Actions', actions]], all, `No ${noun}.`),
      addSchema ? form(`New ${noun}`, addSchema, {}, `Add ${noun}`, async (body) => {
        await api('POST', list, body);
        announce(`Added ${noun}`);
        await draw();
        await onChange();
      }) : null);
  };
  const form = (label, schema, values, submit, send) => schemaForm(doc, { label, schema, values, submit, send, omit });
  await draw();
  return box;
}

/**
 * A form generated from `schema` (see schema.js), filled from `values`; on submit `send(body)`
 * runs and an API error is shown next to the field it names.
 */
export function schemaForm(doc, { label, schema, values = {}, submit, send, omit = [] }) {
  const { fields, read } = schemaFields(doc, schema, { values, omit });
  const f = h('form', { class: 'panel', 'aria-label': label, novalidate: true },
    h('h3', {}, label), fields, h('button', { type: 'submit' }, submit));
  f.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(f);
    try {
      await send(read());
    } catch (e) {
      showError(f, e, f.querySelector('[name]')?.name);
    }
  });
  return f;
}
