// Drives the admin console in headless Debian Chromium (playwright-core, executablePath set)
// against a real Pharos started by tests/console.rs, with every request outside the Pharos
// origin aborted (the console must work offline), and axe-core run on every page.
//
// Input (environment): PHAROS_URL (admin listener), PHAROS_MAIN_URL (main port), PHAROS_USER,
// PHAROS_PASSWORD, PENDING_ENTITY (an entity with a pending enrollment request),
// ENTITY_ID, NEW_ENTITY + NEW_JWKS, NEW_ANCHOR (the subordinate to create), HOSTED_ENTITY and
// HOSTED_SUB (a hosted entity and its subordinate, for the switcher), NEW_METADATA and
// NEW_POLICY (JSON to give NEW_ENTITY), HOSTILE_ENTITY (a subordinate with hostile metadata),
// BLOCK_ENTITY (an active subordinate to block), NEW_HINT (an authority hint to add),
// NEW_OWNER (a trust mark owner to add), LEAF_URL (the Admin API of PENDING_ENTITY, which has no
// users),
// DISABLE_ENDPOINT (an enabled endpoint
// type), EXPECT (JSON: {total, endpoint, endpoint_count, user_agent, country}),
// SCREENSHOTS (directory), CHROMIUM (browser binary).
// Output: one JSON line on stdout ({ok, steps, blocked, axe}); exit status 1 on failure.

import { readFileSync } from 'node:fs';

import { check, env, run, until } from './harness.mjs';

const BASE = env('PHAROS_URL');
const MAIN = process.env.PHAROS_MAIN_URL || BASE;
const SHOTS = env('SCREENSHOTS');
const EXPECT = JSON.parse(env('EXPECT'));


await run({ name: 'console test', origins: [BASE, MAIN, env('LEAF_URL')], screenshots: SHOTS, ignoreConsole: /status of 4[01][0-9]/ }, async ({ page, axe, shot, report }) => {
  const steps = [];
  report.steps = steps;
  const open = async (route, name) => {
    await page.goto(`${BASE}/console/#/${route}`);
    await page.waitForSelector(`#view[data-page="${name}"]:not([aria-busy])`);
  };
  const fieldError = (form, name) => form.locator(`[name="${name}"]`).evaluate((el) => document.getElementById(`${el.id}-error`)?.textContent || '');

  // Sign in: a wrong password is answered on the form (no browser dialog), then the right one.
  await page.goto(`${BASE}/console/`);
  await page.waitForSelector('#login:not([hidden])');
  await axe('login');
  await shot('01-login');
  await page.fill('#login-username', env('PHAROS_USER'));
  await page.fill('#login-password', 'wrong password');
  await page.click('#login button[type="submit"]');
  await until(page, () => document.getElementById('login-error').textContent.includes('Wrong'));
  await page.fill('#login-password', env('PHAROS_PASSWORD'));
  await page.keyboard.press('Enter');
  await page.waitForSelector('#view[data-page="overview"]:not([aria-busy])');
  steps.push('login');

  // Overview: entity identifier, and the endpoint about to be disabled with its URL.
  const disable = env('DISABLE_ENDPOINT');
  check((await page.textContent('[data-field="entity-id"]')) === env('ENTITY_ID'), 'entity identifier shown');
  const overviewText = await page.textContent('#view');
  check(overviewText.includes(`${MAIN}/${disable}`), `overview shows the published ${disable} URL`);
  // The role is what the entity does: it issues statements and trust marks.
  const role = await page.textContent('[data-field="role"]');
  check(role === env('ROLE'), `role derived from what the entity does: ${role}`);
  await axe('overview');
  await shot('02-overview');
  steps.push('overview');

  // Keyboard: on a fresh load (still signed in: the session keeps the credentials) the skip
  // link comes first; Enter on a navigation link opens its page.
  await page.reload();
  await page.waitForSelector('#view[data-page="overview"]:not([aria-busy])');
  await page.keyboard.press('Tab');
  check(await page.evaluate(() => document.activeElement?.id === 'skip'), 'first Tab reaches the skip link');
  await page.focus('nav a[href="#/subordinates"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#view[data-page="subordinates"]:not([aria-busy])');
  steps.push('keyboard');

  // Subordinates: the API's validation message appears next to the field, then a creation.
  const create = page.locator('form[aria-label="New subordinate"]');
  const newEntity = env('NEW_ENTITY');
  await create.locator('[name="entity_id"]').fill('not a url');
  await create.locator('button[type="submit"]').click();
  await until(page, () => [...document.querySelectorAll('form[aria-label="New subordinate"] .error')].some((e) => e.textContent));
  const entityError = await fieldError(create, 'entity_id');
  check(entityError.includes('entity_id must be an absolute'), `API message next to entity_id: ${entityError}`);
  check((await create.locator('[name="entity_id"]').getAttribute('aria-invalid')) === 'true', 'entity_id marked invalid');
  await create.locator('[name="entity_id"]').fill(newEntity);
  await create.locator('[name="description"]').fill('created in the console');
  await create.locator('[name="registered_entity_types"]').fill('openid_relying_party');
  await create.locator('[name="jwks"]').fill(env('NEW_JWKS'));
  await create.locator('button[type="submit"]').click();
  await page.waitForSelector(`#view table a:text-is("${newEntity}")`);
  steps.push('create subordinate');

  // Approve the pending enrollment request.
  const pending = env('PENDING_ENTITY');
  await page.click(`button[aria-label="Approve ${pending}"]`);
  await until(page, (id) => [...document.querySelectorAll('#view tbody tr')]
    .some((tr) => tr.textContent.includes(id) && tr.querySelector('.badge')?.textContent === 'active'), pending);
  await axe('subordinates');
  await shot('03-subordinates');
  steps.push('approve enrollment request');

  // Block and unblock; the search box and the status filter.
  const statusIs = (id, want) => until(page, ([i, w]) => [...document.querySelectorAll('#view tbody tr')]
    .some((tr) => tr.textContent.includes(i) && tr.querySelector('.badge')?.textContent === w), [id, want]);
  // Blocking asks first (an in-page dialog): Cancel changes nothing, Block blocks.
  await page.click(`button[aria-label="Block ${newEntity}"]`);
  await page.waitForSelector('dialog[open]');
  await axe('confirm-dialog');
  await shot('03b-confirm-block');
  await page.click('dialog[open] [data-confirm="no"]');
  await statusIs(newEntity, 'active');
  await page.click(`button[aria-label="Block ${newEntity}"]`);
  await confirm(page);
  await statusIs(newEntity, 'blocked');
  await page.selectOption('select[name="status"]', 'blocked');
  await until(page, (n) => document.querySelectorAll('#view tbody tr').length === n, 1);
  await page.click(`button[aria-label="Unblock ${newEntity}"]`);
  await until(page, () => document.querySelector('#view table') === null);
  await page.selectOption('select[name="status"]', '');
  await page.fill('input[name="search"]', 'rp.console');
  await until(page, (n) => document.querySelectorAll('#view tbody tr').length === n, 1);
  await statusIs(newEntity, 'active');
  await page.fill('input[name="search"]', '');
  steps.push('block, unblock, search, filter');

  // Detail of the new subordinate: keys and history.
  await page.click(`#view table a:text-is("${newEntity}")`);
  await page.waitForSelector('#view[data-page="subordinates"]:not([aria-busy]) h1');
  await until(page, (id) => document.querySelector('#view h1')?.textContent === id, newEntity);
  check((await page.textContent('#view')).includes('created'), 'history lists the creation');
  const rawNull = await page.$$eval('#view pre', (ps) => ps.some((p) => p.textContent.trim() === 'null'));
  check(!rawNull, 'nothing set reads as such, not as a raw null');
  await axe('subordinate-detail');
  await shot('04-subordinate-detail');
  steps.push('subordinate detail');

  // Its metadata and its metadata policy, edited as JSON with the API's messages, and saved
  // with If-Match: an edit made meanwhile by someone else is refused, not overwritten.
  const editor = (name) => page.locator(`form[data-editor="${name}"]`);
  const saved = (name, text) => until(page, ([n, t]) => {
    const f = document.querySelector(`form[data-editor="${n}"]`);
    return f && !f.hasAttribute('aria-busy') && f.querySelector('textarea').value.includes(t) && !f.querySelector('.error')?.textContent;
  }, [name, text]);
  await editor('metadata').locator('textarea').fill(env('NEW_METADATA'));
  await editor('metadata').locator('button[type="submit"]').click();
  await saved('metadata', 'Console RP');
  await editor('metadata_policy').locator('textarea').fill('{"openid_relying_party": {"grant_types": {"subset_of": "authorization_code", "superset_of": ["implicit"]}}}');
  await editor('metadata_policy').locator('button[type="submit"]').click();
  await until(page, () => document.querySelector('form[data-editor="metadata_policy"] textarea')?.getAttribute('aria-invalid') === 'true');
  const policyError = await fieldError(editor('metadata_policy'), 'metadata_policy');
  check(/subset_of|superset_of/.test(policyError), `API message next to the policy: ${policyError}`);
  await editor('metadata_policy').locator('textarea').fill(env('NEW_POLICY'));
  await editor('metadata_policy').locator('button[type="submit"]').click();
  await saved('metadata_policy', 'subset_of');
  // Someone else changes the metadata after this page read it: the console's save is refused.
  const auth = { Authorization: `Basic ${Buffer.from(`${env('PHAROS_USER')}:${env('PHAROS_PASSWORD')}`).toString('base64')}` };
  const metaPath = `${BASE}/api/v1/admin/subordinates/${encodeURIComponent(newEntity)}/metadata`;
  const other = await page.request.put(metaPath, { headers: { ...auth, 'Content-Type': 'application/json' }, data: env('NEW_METADATA').replace('Console RP', 'Other RP') });
  check(other.ok(), `a concurrent edit: ${other.status()}`);
  await editor('metadata').locator('textarea').fill(env('NEW_METADATA').replace('Console RP', 'Stale RP'));
  await editor('metadata').locator('button[type="submit"]').click();
  await until(page, () => [...document.querySelectorAll('form[data-editor="metadata"] .error')].some((e) => e.textContent.includes('someone else')));
  await editor('metadata').locator('button:text-is("Load the current version")').click();
  await saved('metadata', 'Other RP');
  await editor('metadata').locator('textarea').fill(env('NEW_METADATA'));
  await editor('metadata').locator('button[type="submit"]').click();
  await saved('metadata', 'Console RP');
  // Settings: the description.
  const settings = page.locator('form[aria-label="Subordinate settings"]');
  await settings.locator('[name="description"]').fill('edited in the console');
  await settings.locator('button[type="submit"]').click();
  await until(page, () => document.querySelector('[data-field="description"]')?.textContent === 'Saved description: edited in the console');
  await axe('subordinate-edit');
  await shot('04b-subordinate-edit');
  steps.push('edit subordinate metadata, policy and settings');

  // A subordinate whose metadata is hostile: markup, scripts, javascript: URIs, a logo on
  // this very origin and very long strings are shown as text; nothing is loaded or run.
  const requested = [];
  page.on('request', (r) => requested.push(r.url()));
  const hostile = env('HOSTILE_ENTITY');
  await open(`subordinates/${encodeURIComponent(hostile)}`, 'subordinates');
  await until(page, (id) => document.querySelector('#view h1')?.textContent === id, hostile);
  await open('subordinates', 'subordinates');
  await until(page, () => document.querySelectorAll('#view tbody tr').length > 1);
  const hostileCheck = async (where, shownAsText) => {
    const r = await page.evaluate(() => ({
      pwned: window.pwned === true,
      images: document.querySelectorAll('#view img, #view iframe, #view object, #view embed').length,
      jsLinks: [...document.querySelectorAll('a[href]')].filter((a) => !/^(#|https?:|\/)/.test(a.getAttribute('href'))).length,
      overflow: document.documentElement.scrollWidth - window.innerWidth,
      shown: document.querySelector('#view').textContent.includes('<img'),
    }));
    check(!r.pwned && !r.images && !r.jsLinks, `${where}: hostile metadata stays text ${JSON.stringify(r)}`);
    check(r.overflow <= 1, `${where}: very long strings wrap (page wider than the window by ${r.overflow}px)`);
    if (shownAsText) check(r.shown, `${where}: the markup is shown as text`);
  };
  await hostileCheck('subordinate list', false);
  await open(`subordinates/${encodeURIComponent(hostile)}`, 'subordinates');
  await until(page, (id) => document.querySelector('#view h1')?.textContent === id, hostile);
  await hostileCheck('subordinate detail', true);
  await axe('hostile-metadata');
  await shot('04c-hostile-metadata');
  const probes = requested.filter((u) => u.includes('hostile-logo'));
  check(!probes.length, `nothing from the hostile metadata was requested: ${probes}`);
  steps.push('hostile metadata shown as text');

  // Block a subject from its detail page (with the confirmation).
  const blockMe = env('BLOCK_ENTITY');
  await open(`subordinates/${encodeURIComponent(blockMe)}`, 'subordinates');
  await page.click(`button[aria-label="Block ${blockMe}"]`);
  await confirm(page);
  await until(page, () => document.querySelector('#view dd .badge')?.textContent === 'blocked');
  steps.push('block a subject');

  // Entity Configuration: an authority hint is added and published.
  await open('entity-configuration', 'entity-configuration');
  const hint = env('NEW_HINT');
  const hintForm = page.locator('form[aria-label="New authority hint"]');
  await hintForm.locator('[name="entity_id"]').fill('not a url');
  await hintForm.locator('button[type="submit"]').click();
  await until(page, () => document.querySelector('form[aria-label="New authority hint"] [name="entity_id"]')?.getAttribute('aria-invalid') === 'true');
  await hintForm.locator('[name="entity_id"]').fill(hint);
  await hintForm.locator('button[type="submit"]').click();
  await until(page, (id) => document.querySelector('[data-field="published-hints"]')?.textContent.includes(id), hint);
  check((await entityConfiguration(page)).authority_hints?.includes(hint), 'the hint is in the served Entity Configuration');
  // Its note, edited in place with the hint's entity tag; an edit made meanwhile elsewhere
  // refuses the stale save.
  const editHint = async () => {
    await page.click(`summary[aria-label="Edit authority hint ${hint}"]`);
    await page.waitForSelector(`form[aria-label="Edit authority hint ${hint}"] [name="description"]`);
    return page.locator(`form[aria-label="Edit authority hint ${hint}"]`);
  };
  let hintEdit = await editHint();
  const hintUrl = `${BASE}/api/v1/admin/entity-configuration/authority-hints/${encodeURIComponent(hint)}`;
  const elsewhere = await page.request.put(hintUrl, { headers: { ...auth, 'Content-Type': 'application/json' }, data: JSON.stringify({ description: 'changed elsewhere' }) });
  check(elsewhere.ok(), `a concurrent edit of the hint: ${elsewhere.status()}`);
  await hintEdit.locator('[name="description"]').fill('our superior');
  await hintEdit.locator('button[type="submit"]').click();
  await until(page, (h) => [...document.querySelectorAll(`form[aria-label="Edit authority hint ${h}"] .error`)].some((e) => e.textContent.includes('someone else')), hint);
  await open('entity-configuration', 'entity-configuration');
  await page.reload();
  await page.waitForSelector('#view[data-page="entity-configuration"]:not([aria-busy])');
  hintEdit = await editHint();
  check((await hintEdit.locator('[name="description"]').inputValue()) === 'changed elsewhere', 'the form reads the hint as it is now');
  await hintEdit.locator('[name="description"]').fill('our superior');
  await hintEdit.locator('button[type="submit"]').click();
  await until(page, () => [...document.querySelectorAll('[data-collection="/entity-configuration/authority-hints"] td')].some((td) => td.textContent === 'our superior'));
  await axe('entity-configuration');
  await shot('13-entity-configuration');
  steps.push('add authority hint');

  // Keys: the calendar, a rotation scheduled by the policy, and a rotation now.
  await open('keys', 'keys');
  const kidsBefore = await page.$$eval('svg[data-plot="key-calendar"] rect[data-kid]', (rs) => rs.map((r) => r.dataset.kid));
  check(kidsBefore.length >= 1, `the calendar draws the published keys: ${kidsBefore}`);
  check((await page.textContent('[data-field="next-rotation"]')) === 'automatic rotation is off', 'no rotation scheduled yet');
  const policy = page.locator('form[aria-label="Rotation policy"]');
  await policy.locator('[name="interval"]').fill('-5');
  await policy.locator('[name="enabled"]').check();
  await policy.locator('button[type="submit"]').click();
  await until(page, () => [...document.querySelectorAll('form[aria-label="Rotation policy"] .error')].some((e) => e.textContent.includes('duration')));
  await policy.locator('[name="interval"]').fill('720h');
  await policy.locator('button[type="submit"]').click();
  await until(page, () => /UTC$/.test(document.querySelector('[data-field="next-rotation"]')?.textContent || ''));
  await page.locator('form[aria-label="Rotate now"] button[type="submit"]').click();
  await confirm(page);
  await until(page, (before) => [...document.querySelectorAll('svg[data-plot="key-calendar"] rect[data-kid]')]
    .some((r) => !before.includes(r.dataset.kid)), kidsBefore);
  await until(page, () => document.querySelector('[data-field="superiors"] [data-agreement="unreachable"]'));
  await axe('keys');
  await shot('14-keys');
  steps.push('schedule and perform a rotation');

  // The key calendar's alarm, on the subordinate that enrolled above: it rotates and revokes
  // its key, and its console shows the superior still publishing the dropped key.
  const LEAF = env('LEAF_URL');
  const rotated = await page.request.post(`${LEAF}/api/v1/admin/kms/rotate?revoke=true&reason=superseded`);
  check(rotated.status() === 202, `the subordinate rotates: ${rotated.status()}`);
  await page.goto(`${LEAF}/console/#/keys`);
  await page.waitForSelector('#view[data-page="keys"]:not([aria-busy])');
  await page.waitForSelector('[data-field="superiors"] [data-agreement="stale_and_missing"]');
  const alarm = await page.$eval('[data-field="superiors"] [data-agreement="stale_and_missing"]', (b) => ({ cls: b.className, text: b.closest('tr').textContent }));
  check(alarm.cls.includes('blocked') && alarm.text.includes('Still published there'), `the alarm in colour and words: ${JSON.stringify(alarm)}`);
  await axe('key-alarm');
  await shot('16-key-alarm');
  steps.push('key alarm');

  // Trust anchors: one is added through the form.
  await open('trust-anchors', 'trust-anchors');
  const anchor = env('NEW_ANCHOR');
  const taForm = page.locator('form[aria-label="New trust anchor"]');
  await taForm.locator('[name="entity_id"]').fill(anchor);
  await taForm.locator('[name="jwks"]').fill(env('NEW_JWKS'));
  await taForm.locator('button[type="submit"]').click();
  await until(page, (id) => [...document.querySelectorAll('#view tbody td')].some((td) => td.textContent === id), anchor);
  const anchorsCaption = await page.textContent('#view caption');
  check(anchorsCaption === '1 trust anchor', `one anchor counted in the singular: ${anchorsCaption}`);
  await axe('trust-anchors');
  await shot('05-trust-anchors');
  steps.push('trust anchors');

  // Trust marks: the pending request is approved; the subject is then listed as active.
  await open('trust-marks', 'trust-marks');
  await axe('trust-marks');
  await shot('06-trust-marks');
  const [tmType, tmSubject] = [env('TM_TYPE'), env('TM_SUBJECT')];
  await page.click(`button[aria-label="Approve ${tmSubject} for ${tmType}"]`);
  await until(page, (id) => [...document.querySelectorAll('#view tbody tr')]
    .some((tr) => tr.textContent.includes(id) && tr.querySelector('.badge')?.textContent === 'active'), tmSubject);
  check(!(await page.$(`button[aria-label="Approve ${tmSubject} for ${tmType}"]`)), 'no longer pending');
  steps.push('approve trust mark request');

  // A subject is added through the form, active at once.
  const newSubject = env('TM_NEW_SUBJECT');
  const subjectForm = page.locator('form[aria-label="New subject"]');
  await subjectForm.locator('[name="trust_mark_type"]').selectOption({ label: tmType });
  await subjectForm.locator('[name="entity_id"]').fill(newSubject);
  await subjectForm.locator('button[type="submit"]').click();
  await until(page, (id) => [...document.querySelectorAll('#view tbody tr')]
    .some((tr) => tr.textContent.includes(id) && tr.querySelector('.badge')?.textContent === 'active'), newSubject);
  const captions = await page.$$eval('#view caption', (cs) => cs.map((c) => c.textContent));
  check(captions.includes('1 trust mark type') && captions.includes('1 specification') && captions.includes('2 subjects'),
    `trust mark counts in the singular and plural: ${captions}`);
  await axe('trust-marks-subject');
  steps.push('add trust mark subject');

  // An owner, through the form generated from the API's schema.
  const ownerForm = page.locator('form[aria-label="New owner"]');
  await ownerForm.locator('[name="entity_id"]').fill(env('NEW_OWNER'));
  await ownerForm.locator('[name="jwks"]').fill(env('NEW_JWKS'));
  await ownerForm.locator('button[type="submit"]').click();
  await until(page, (id) => [...document.querySelectorAll('[data-collection="/trust-marks/owners"] tbody td')].some((td) => td.textContent === id), env('NEW_OWNER'));
  await axe('trust-marks-owner');
  steps.push('add trust mark owner');

  // Endpoints: a bad path is refused with the API's message next to the path field; then the
  // endpoint is disabled and its URL is gone from the signed Entity Configuration.
  await open('endpoints', 'endpoints');
  await axe('endpoints');
  await shot('07-endpoints');
  const form = page.locator(`form[data-endpoint="${disable}"]`);
  await form.locator('[name="path"]').fill('no-slash');
  await form.locator('button[type="submit"]').click();
  await until(page, (t) => document.querySelector(`form[data-endpoint="${t}"] [name="path"]`)?.getAttribute('aria-invalid') === 'true', disable);
  const pathError = await fieldError(form, 'path');
  check(pathError.includes("path must start with '/'"), `API message next to path: ${pathError}`);
  const ecBefore = await entityConfiguration(page);
  check(ecBefore.metadata?.federation_entity?.[`federation_${disable}_endpoint`], `${disable} published before`);
  await form.locator(`button[aria-label="Disable ${disable}"]`).click();
  await until(page, (t) => document.querySelector(`form[data-endpoint="${t}"] .badge`)?.textContent === 'disabled', disable);
  const ecAfter = await entityConfiguration(page);
  check(!(`federation_${disable}_endpoint` in (ecAfter.metadata?.federation_entity || {})), `${disable} URL gone from the Entity Configuration`);
  await shot('08-endpoint-disabled');
  await open('overview', 'overview');
  check(!(await page.textContent('#view')).includes(`${MAIN}/${disable}`), 'overview no longer lists the URL');
  steps.push('disable endpoint');

  // Statistics: plots drawn from the recorded requests.
  await open('statistics', 'statistics');
  await page.waitForSelector('svg[data-plot="timeseries"]');
  const bars = await page.$$eval('svg[data-plot="timeseries"] rect[data-series="requests"]', (rs) => rs.map((r) => Number(r.dataset.value)));
  check(bars.length > 0 && bars.reduce((a, b) => a + b, 0) === EXPECT.total, `timeseries bars sum to ${EXPECT.total}: ${bars}`);
  // Every hour of the last 24 is a bar, the quiet ones as zero.
  check(bars.length >= 24 && bars.includes(0), `empty hours drawn as zero: ${bars.length} bars`);
  const statsText = await page.textContent('#view');
  const singular = statsText.match(/(^|[^0-9])1 (requests|errors|entries|buckets)\b/);
  check(!singular, `one of a kind in the singular: ${singular?.[0]}`);
  const bar = (plot, label) => page.$eval(`svg[data-plot="${plot}"]`, (svg, l) => {
    const r = [...svg.querySelectorAll('rect')].find((x) => x.dataset.label === l);
    return r ? Number(r.dataset.value) : null;
  }, label);
  check((await bar('endpoints', EXPECT.endpoint)) === EXPECT.endpoint_count, `top endpoints: ${EXPECT.endpoint}`);
  check((await bar('user-agents', EXPECT.user_agent)) === EXPECT.endpoint_count, `top user agents: ${EXPECT.user_agent}`);
  check((await bar('countries', EXPECT.country)) === EXPECT.endpoint_count, `top countries: ${EXPECT.country}`);
  check((await page.$$('svg[data-plot="latency"] rect')).length === 6, 'latency percentiles drawn');
  check((await page.textContent('[data-field="total-requests"]')) === String(EXPECT.total), 'total requests card');
  await axe('statistics');
  await shot('09-statistics');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('text=Export CSV')]);
  const csv = readFileSync(await download.path(), 'utf8').trim().split('\n');
  check(download.suggestedFilename() === 'stats.csv' && csv.length === EXPECT.total + 1, `CSV export has ${EXPECT.total} rows: ${csv.length - 1}`);
  steps.push('statistics');

  // Hosted entities: the switcher moves every page to another entity, and back.
  const hosted = env('HOSTED_ENTITY');
  const hostedSub = env('HOSTED_SUB');
  await open('subordinates', 'subordinates');
  check(!(await page.textContent('#view')).includes(hostedSub), 'the default entity does not list the hosted one\'s subordinate');
  const option = await page.$eval('#entity', (s, id) => [...s.options].find((o) => o.textContent.includes(id))?.value, hosted);
  check(option, `the switcher offers ${hosted}`);
  await page.selectOption('#entity', option);
  await until(page, (id) => !document.querySelector('#view').hasAttribute('aria-busy')
    && document.querySelector('#view').textContent.includes(id), hostedSub);
  check(!(await page.textContent('#view')).includes(newEntity), 'the hosted entity does not list the default one\'s subordinates');
  await axe('subordinates-hosted');
  await shot('10-subordinates-hosted');
  await page.selectOption('#entity', '1');
  await until(page, (id) => !document.querySelector('#view').hasAttribute('aria-busy')
    && document.querySelector('#view').textContent.includes(id), newEntity);
  steps.push('entity switcher');

  // Users: one added through the generated form (the password field is a password input).
  await open('deployment', 'deployment');
  const userForm = page.locator('form[aria-label="New user"]');
  check((await userForm.locator('[name="password"]').getAttribute('type')) === 'password', 'the password is masked');
  await userForm.locator('[name="username"]').fill('bob');
  await userForm.locator('[name="password"]').fill('another long passphrase');
  await userForm.locator('button[type="submit"]').click();
  await until(page, () => [...document.querySelectorAll('[data-collection="/users"] tbody code')].some((c) => c.textContent === 'bob'));
  await axe('users');
  await shot('15-users');
  steps.push('add a user');

  // Dark mode: same pages, same accessibility bar.
  await page.emulateMedia({ colorScheme: 'dark' });
  await open('statistics', 'statistics');
  await axe('statistics-dark');
  await shot('11-statistics-dark');
  await open('subordinates', 'subordinates');
  await axe('subordinates-dark');
  await shot('12-subordinates-dark');
  for (const [route, name] of [['keys', 'keys'], ['map', 'map'], ['entity-configuration', 'entity-configuration'], ['deployment', 'deployment'], ['trust-marks', 'trust-marks']]) {
    await open(route, name);
    await axe(`${name}-dark`);
  }
  await shot('17-trust-marks-dark');
  steps.push('dark mode');
});


/** Presses the confirming button of the in-page confirmation dialog. */
async function confirm(page) {
  await page.waitForSelector('dialog[open] [data-confirm="yes"]');
  await page.click('dialog[open] [data-confirm="yes"]');
  await page.waitForSelector('dialog[open]', { state: 'detached' });
}


/** The served Entity Configuration's payload (signature checked by the Rust side). */
async function entityConfiguration(page) {
  const r = await page.request.get(`${MAIN}/.well-known/openid-federation`);
  check(r.ok(), 'Entity Configuration served');
  const jwt = await r.text();
  return JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8'));
}
