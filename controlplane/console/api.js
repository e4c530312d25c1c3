// The console's only way to the server: the Admin API, with the operator's Basic credentials
// (kept in sessionStorage, so they end with the tab). X-Requested-With asks the API not to send
// a WWW-Authenticate challenge, so a wrong password shows our form, not the browser's dialog.

import { declared } from './operations.js';

const BASE = '/api/v1/admin';
const KEY = 'pharos.console.credentials';
const ENTITY = 'pharos.console.entity';

/** The hosted entity the pages manage (its number as a string), or null for the default. */
export function currentEntity() {
  return sessionStorage.getItem(ENTITY);
}

/** Manages hosted entity `id` from now on (null: the one configured in `entity_id`). */
export function setEntity(id) {
  if (id === null || id === undefined || String(id) === '1') sessionStorage.removeItem(ENTITY);
  else sessionStorage.setItem(ENTITY, String(id));
}

/**
 * The URL of `path` for the chosen entity: a hosted entity's resources are under
 * /entities/{id}; users and the hosted entities themselves belong to the deployment.
 */
function urlOf(path) {
  const entity = currentEntity();
  const first = path.split(/[/?]/)[1];
  if (!entity || first === 'users' || first === 'entities') return BASE + path;
  return `${BASE}/entities/${encodeURIComponent(entity)}${path}`;
}

/** An answer other than 2xx, with the API's `error` and `error_description`. */
export class ApiError extends Error {
  constructor(status, code, description) {
    super(description);
    this.status = status;
    this.code = code;
  }
}

function base64(text) {
  const bytes = new TextEncoder().encode(text);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

export function setCredentials(user, password) {
  sessionStorage.setItem(KEY, JSON.stringify({ user, token: base64(`${user}:${password}`) }));
}

export function clearCredentials() {
  sessionStorage.removeItem(KEY);
}

/** The signed-in user name, if any. */
export function currentUser() {
  try {
    return JSON.parse(sessionStorage.getItem(KEY) || 'null')?.user ?? null;
  } catch {
    return null;
  }
}

let onUnauthorized = () => {};
/** What to do when the API answers 401 (the session's credentials no longer work). */
export function whenUnauthorized(f) {
  onUnauthorized = f;
}

function headers(extra) {
  const h = { 'X-Requested-With': 'XMLHttpRequest', Accept: 'application/json', ...extra };
  try {
    const c = JSON.parse(sessionStorage.getItem(KEY) || 'null');
    if (c?.token) h.Authorization = `Basic ${c.token}`;
  } catch {
    /* no credentials */
  }
  return h;
}

/**
 * Calls the Admin API. `body` is sent as JSON, or as text/plain when `text` is set (status
 * words). Resolves to the parsed answer (null when empty); rejects with an ApiError.
 */
export async function api(method, path, body, opts = {}) {
  return (await exchange(method, path, body, opts)).value;
}

/**
 * GETs a resource with its ETag ({ value, tag }): a page that changes what it read sends the
 * tag back as `ifMatch`, so an edit made meanwhile by someone else is refused (412) rather
 * than overwritten.
 */
export async function getTagged(path) {
  return exchange('GET', path, undefined, {});
}

async function exchange(method, path, body, { text = false, quiet401 = false, ifMatch = null } = {}) {
  if (method !== 'GET') {
    // Only the writes operations.js declares, with the fields it lists for hand-written forms.
    const d = declared(method, path);
    if (!d) throw new Error(`the console has no declared Admin API operation ${method} ${path}`);
    const extraFields = d.fields && body && typeof body === 'object'
      ? Object.keys(body).filter((k) => !d.fields.includes(k)) : [];
    if (extraFields.length) throw new Error(`${d.op} does not declare ${extraFields.join(', ')}`);
  }
  const extra = {};
  if (ifMatch) extra['If-Match'] = ifMatch;
  let payload;
  if (body !== undefined) {
    extra['Content-Type'] = text ? 'text/plain' : 'application/json';
    payload = text ? String(body) : JSON.stringify(body);
  }
  const r = await fetch(urlOf(path), {
    method, headers: headers(extra), body: payload, credentials: 'omit', cache: 'no-store',
  });
  const raw = await r.text();
  let value = null;
  if (raw) {
    try { value = JSON.parse(raw); } catch { value = raw; }
  }
  if (!r.ok) {
    if (r.status === 401 && !quiet401) onUnauthorized();
    const description = value && typeof value === 'object'
      ? value.error_description ?? value.error : (value || r.statusText);
    throw new ApiError(r.status, value?.error ?? 'error', String(description || `HTTP ${r.status}`));
  }
  return { value, tag: r.headers.get('ETag') };
}

/** Downloads an Admin API resource as a file (the CSV export needs our Authorization header). */
export async function download(path, filename) {
  const r = await fetch(urlOf(path), { headers: headers({}), credentials: 'omit', cache: 'no-store' });
  if (!r.ok) {
    const t = await r.text();
    let d = t;
    try { d = JSON.parse(t).error_description ?? t; } catch { /* plain */ }
    throw new ApiError(r.status, 'error', d);
  }
  const blob = await r.blob();
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/** Percent-encodes one path segment (entity identifiers are URLs). */
export const seg = (s) => encodeURIComponent(String(s));
