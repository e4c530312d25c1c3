// Forms generated from the Admin API's own OpenAPI document: a field per property of the
// operation's request body, named as the API names it (so its validation messages land next
// to the right field), with the property's description as the hint. A field added to the API
// appears in the console without a console change; none can be forgotten.

import { field, h, parseJson } from './dom.js';

let loading = null;

/** The OpenAPI document (fetched once per page load; the browser revalidates it by ETag). */
export function openapi() {
  if (!loading) {
    loading = fetch('/api/v1/admin/openapi.json', { credentials: 'omit' }).then((r) => {
      if (!r.ok) throw new Error(`the Admin API document could not be read (HTTP ${r.status})`);
      return r.json();
    });
    loading.catch(() => { loading = null; });
  }
  return loading;
}

/** Follows `$ref`s and unwraps `oneOf: [X, null]` (an optional value). */
export function resolve(doc, schema) {
  let s = schema || {};
  for (let i = 0; i < 8; i += 1) {
    if (s.$ref) s = doc.components?.schemas?.[s.$ref.split('/').pop()] || {};
    else if (s.oneOf) s = s.oneOf.find((x) => x.type !== 'null') || {};
    else break;
  }
  return s;
}

/** The JSON request-body schema of `method` on `template` (a documented path), or null. */
export function requestSchema(doc, method, template) {
  const op = doc.paths?.[template]?.[method.toLowerCase()];
  const body = op?.requestBody?.content?.['application/json']?.schema;
  return body ? resolve(doc, body) : null;
}

const types = (s) => [].concat(s.type || []).filter((t) => t !== 'null');

/** How a property is edited: `check`, `number`, `list` (comma-separated strings), `text` or `json`. */
export function kindOf(doc, prop) {
  const s = resolve(doc, prop);
  const t = types(s);
  if (s.enum && !t.includes('object')) return 'text';
  if (t.length === 1 && t[0] === 'boolean') return 'check';
  if (t.length === 1 && (t[0] === 'integer' || t[0] === 'number')) return 'number';
  if (t.length === 1 && t[0] === 'string') return 'text';
  if (t.length === 1 && t[0] === 'array' && types(resolve(doc, s.items)).every((x) => x === 'string')
    && types(resolve(doc, s.items)).length) return 'list';
  return 'json';
}

const label = (name) => name.replace(/_/g, ' ').replace(/^./, (c) => c.toUpperCase());

/**
 * The fields of `schema` (a resolved object schema), filled from `values`; `omit` names
 * properties the page sets itself. Returns { fields, read } where `read()` gives the body:
 * only what the operator filled in (or changed from `values`), typed as the schema says.
 */
export function schemaFields(doc, schema, { values = {}, omit = [] } = {}) {
  const props = Object.entries(schema?.properties || {}).filter(([n]) => !omit.includes(n));
  const required = new Set(schema?.required || []);
  const controls = props.map(([name, prop]) => {
    const kind = kindOf(doc, prop);
    const v = values[name];
    const s = resolve(doc, prop);
    let control;
    if (kind === 'check') control = h('input', { name, type: 'checkbox', checked: !!v });
    else if (kind === 'json') {
      control = h('textarea', { name, rows: 4, spellcheck: 'false' });
      control.value = v === undefined || v === null ? '' : JSON.stringify(v, null, 2);
    } else if (s.enum) {
      control = h('select', { name }, h('option', { value: '' }, '—'), s.enum.filter((e) => e !== null).map((e) => h('option', { value: String(e) }, String(e))));
      control.value = v === undefined || v === null ? '' : String(v);
    } else {
      const secret = /password|secret/.test(name);
      control = h('input', { name, type: secret ? 'password' : 'text', inputmode: kind === 'number' ? 'numeric' : null, autocomplete: secret ? 'new-password' : null });
      control.value = v === undefined || v === null ? '' : (kind === 'list' ? [].concat(v).join(', ') : String(v));
    }
    const hint = [prop.description || s.description, kind === 'list' ? 'Comma-separated.' : '', kind === 'json' ? 'JSON.' : '']
      .filter(Boolean).join(' ');
    return { name, kind, control, initial: control.type === 'checkbox' ? control.checked : control.value, box: field(`${label(name)}${required.has(name) ? ' (required)' : ''}`, control, hint) };
  });
  const read = () => {
    const body = {};
    for (const c of controls) {
      const changed = c.control.type === 'checkbox' ? c.control.checked !== c.initial : c.control.value !== c.initial;
      if (!changed && !required.has(c.name) && values[c.name] === undefined) continue;
      if (c.kind === 'check') body[c.name] = c.control.checked;
      else if (c.kind === 'json') {
        const parsed = parseJson(c.control.value, c.name);
        if (parsed !== undefined) body[c.name] = parsed;
      } else if (c.kind === 'list') {
        body[c.name] = c.control.value.split(',').map((x) => x.trim()).filter(Boolean);
      } else if (c.control.value.trim() !== '') {
        body[c.name] = c.kind === 'number' ? Number(c.control.value.trim()) : c.control.value.trim();
        if (c.kind === 'number' && Number.isNaN(body[c.name])) throw new Error(`${c.name}: a number`);
      }
    }
    return body;
  };
  return { fields: controls.map((c) => c.box), read };
}
