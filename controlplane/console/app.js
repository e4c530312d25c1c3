// Entry point: sign-in, navigation (hash routes such as #/subordinates), and the pages.
// A page module exports `render(view, params)`; it fetches what it shows from the Admin API.

import {
  api, clearCredentials, currentEntity, currentUser, setCredentials, setEntity, whenUnauthorized,
} from './api.js';
import { h, mount } from './dom.js';
import * as overview from './overview.js';
import * as subordinates from './subordinates.js';
import * as anchors from './anchors.js';
import * as trustmarks from './trustmarks.js';
import * as endpoints from './endpoints.js';
import * as entity from './entity.js';
import * as keys from './keys.js';
import * as map from './map.js';
import * as deployment from './deployment.js';
import * as stats from './stats.js';
import * as explain from './explain.js';

const PAGES = {
  overview: ['Overview', overview],
  subordinates: ['Subordinates', subordinates],
  'trust-anchors': ['Trust anchors', anchors],
  'trust-marks': ['Trust marks', trustmarks],
  'entity-configuration': ['Entity Configuration', entity],
  keys: ['Keys', keys],
  map: ['Federation map', map],
  endpoints: ['Federation endpoints', endpoints],
  statistics: ['Statistics', stats],
  deployment: ['Users and hosted entities', deployment],
  explain: ['Chain explainer', explain],
};

const $ = (id) => document.getElementById(id);
let signedIn = false;

function showLogin(message = '') {
  signedIn = false;
  $('nav').hidden = true;
  $('logout').hidden = true;
  $('who').textContent = '';
  mount($('view'));
  $('login').hidden = false;
  $('login-error').textContent = message;
  document.title = 'Sign in · Pharos console';
  $('login-username').focus();
}

/**
 * The entity switcher: the hosted entities this user may see (GET /entities lists only
 * those). Hidden while there is only the default one; a choice re-renders the page for it.
 */
async function loadEntities() {
  const select = $('entity');
  let list = [];
  try {
    list = await api('GET', '/entities');
  } catch {
    list = [];
  }
  const ids = list.map((e) => String(e.id));
  if (currentEntity() && !ids.includes(currentEntity())) setEntity(null);
  // A user limited to other entities than the default one starts on the first of them.
  if (!currentEntity() && ids.length && !ids.includes('1')) setEntity(ids[0]);
  const chosen = currentEntity() ?? '1';
  select.replaceChildren(...list.map((e) => h('option', { value: String(e.id) },
    e.display_name ? `${e.display_name} (${e.entity_id})` : e.entity_id)));
  select.value = chosen;
  const many = list.length > 1 || (list.length === 1 && chosen !== '1');
  select.hidden = !many;
  $('entity-label').hidden = !many;
}

async function showApp() {
  signedIn = true;
  $('login').hidden = true;
  $('nav').hidden = false;
  $('logout').hidden = false;
  const user = currentUser();
  $('who').textContent = user ? `Signed in as ${user}` : 'No admin user yet (local access)';
  await loadEntities();
  route();
}

/** Renders the page the hash names (#/name/param…); other hashes (#main) are in-page links. */
async function route() {
  if (!signedIn) return;
  const hash = location.hash || '#/overview';
  if (!hash.startsWith('#/')) return;
  const [name, ...params] = hash.slice(2).split('/').map(decodeURIComponent);
  const page = PAGES[name] || PAGES.overview;
  for (const a of document.querySelectorAll('nav a')) {
    if (a.getAttribute('href') === `#/${name}`) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = `${page[0]} · Pharos console`;
  const view = $('view');
  mount(view, h('p', { class: 'muted' }, 'Loading…'));
  view.setAttribute('aria-busy', 'true');
  try {
    await page[1].render(view, params);
  } catch (e) {
    mount(view, h('h1', {}, page[0]), h('p', { class: 'error', role: 'alert' }, `Could not load: ${e.message}`));
  }
  view.removeAttribute('aria-busy');
  view.dataset.page = name;
}

async function signIn(ev) {
  ev.preventDefault();
  const user = $('login-username').value.trim();
  const password = $('login-password').value;
  if (!user || !password) {
    $('login-error').textContent = 'Enter a user name and a password.';
    return;
  }
  setCredentials(user, password);
  try {
    // Any user may list the entities it sees: the probe of the credentials.
    await api('GET', '/entities', undefined, { quiet401: true });
    $('login-password').value = '';
    showApp();
    $('main').focus();
  } catch (e) {
    clearCredentials();
    $('login-error').textContent = e.status === 401 ? 'Wrong user name or password.' : e.message;
  }
}

async function start() {
  whenUnauthorized(() => { clearCredentials(); showLogin('Your session has ended: sign in again.'); });
  $('login-form').addEventListener('submit', signIn);
  $('logout').addEventListener('click', () => {
    clearCredentials();
    setEntity(null);
    showLogin('Signed out.');
  });
  $('skip').addEventListener('click', (e) => { e.preventDefault(); $('main').focus(); });
  $('entity').addEventListener('change', (e) => { setEntity(e.target.value); route(); });
  window.addEventListener('hashchange', route);
  try {
    // Signed in already (this tab), or the API is open because no admin user exists yet.
    await api('GET', '/entities', undefined, { quiet401: true });
    showApp();
  } catch (e) {
    clearCredentials();
    showLogin(e.status === 401 ? '' : e.message);
  }
}

start();
