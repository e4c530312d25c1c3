// The federation map page with 10,000 collected entities (started by tests/federation_map.rs):
// it renders, opens a branch from the keyboard, pages its members, finds an entity by search
// with its path, filters by status, passes axe-core, and loads nothing from outside Pharos.
//
// Input (environment): PHAROS_URL, PHAROS_USER, PHAROS_PASSWORD, EXPECT_TOTAL, INTERMEDIATE
// (a superior to open), LEAF (an entity to search for), BLOCKED (a blocked subordinate),
// SCREENSHOTS, CHROMIUM.
// Output: one JSON line ({ok, steps, blocked, axe, timings}); exit status 1 on failure.
// `timings` (milliseconds: overview, the reference; render, expand, search) are reported for the benchmark script,
// never asserted.

import { readFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';

const require = createRequire(import.meta.url);
const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const BASE = env('PHAROS_URL');
const SHOTS = env('SCREENSHOTS');
const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const origin = new URL(BASE).origin;

setTimeout(() => {
  console.log(JSON.stringify({ ok: false, error: 'map test did not finish within 5 minutes' }));
  process.exit(1);
}, 300_000).unref();

const steps = [];
const blocked = [];
const pageErrors = [];
const axeReport = {};
const timings = {};
mkdirSync(SHOTS, { recursive: true });
const check = (cond, what) => { if (!cond) throw new Error(`check failed: ${what}`); };

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-dev-shm-usage'],
});
let failure = null;
try {
  const context = await browser.newContext({ viewport: { width: 1366, height: 900 } });
  await context.route('**/*', (route) => {
    const url = route.request().url();
    let o = '';
    try { o = new URL(url).origin; } catch { /* data: */ }
    if (o === origin) return route.continue();
    blocked.push(url);
    return route.abort('internetdisconnected');
  });
  const page = await context.newPage();
  page.on('pageerror', (e) => pageErrors.push(`pageerror: ${e.message}`));
  // The sign-in probe's 401 before the credentials exist is expected.
  page.on('console', (m) => { if (m.type() === 'error' && !/status of 401/.test(m.text())) pageErrors.push(`console: ${m.text()}`); });
  const axe = async (name) => {
    if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) await page.evaluate(axeSource);
    const r = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
    const serious = r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    axeReport[name] = r.violations.map((v) => `${v.impact}:${v.id}`);
    check(!serious.length, `axe on ${name}: ${JSON.stringify(serious.map((v) => ({ id: v.id, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) })))}`);
  };
  const shot = (name) => page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: false });

  await page.goto(`${BASE}/console/`);
  await page.waitForSelector('#login:not([hidden])');
  await page.fill('#login-username', env('PHAROS_USER'));
  await page.fill('#login-password', env('PHAROS_PASSWORD'));
  // The reference of the same run: the overview page (a few small Admin API reads).
  let t = Date.now();
  await page.keyboard.press('Enter');
  await page.waitForSelector('#view[data-page="overview"]:not([aria-busy])');
  timings.overview = Date.now() - t;
  steps.push('login');

  // Render: from the navigation to the drawn page.
  t = Date.now();
  await page.click('nav a[href="#/map"]');
  await page.waitForSelector('#view[data-page="map"]:not([aria-busy]) [data-field="map-tree"] li');
  timings.render = Date.now() - t;
  check((await page.textContent('[data-field="map-total"]')) === env('EXPECT_TOTAL'), 'the total counts every entity');
  const bars = await page.$$eval('svg[data-plot="superiors"] rect', (rs) => rs.length);
  check(bars === 21, `the picture draws the anchor and the 20 intermediates: ${bars}`);
  // Only what is open is drawn: the anchor's members, not 10,000 rows.
  const drawn = await page.$$eval('#view li', (ls) => ls.length);
  check(drawn < 200, `a closed branch draws nothing: ${drawn} items`);
  await axe('map');
  await shot('map-overview');
  steps.push('render');

  // Keyboard: focus the intermediate's summary and open it with Enter; its members appear a
  // page at a time, and "Show more" draws the next page.
  const ia = env('INTERMEDIATE');
  t = Date.now();
  await page.focus(`li[data-entity="${ia}"] > details > summary`);
  await page.keyboard.press('Enter');
  await page.waitForSelector(`li[data-entity="${ia}"] details[open] ul li`);
  timings.expand = Date.now() - t;
  const members = () => page.$$eval(`li[data-entity="${ia}"] details ul.tree > li`, (ls) => ls.length);
  check((await members()) === 100, `first page of members: ${await members()}`);
  await page.click(`li[data-entity="${ia}"] details button:has-text("Show 100 more")`);
  check((await members()) === 200, `second page of members: ${await members()}`);
  await axe('map-expanded');
  await shot('map-expanded');
  steps.push('expand a branch');

  // Search: one leaf among 10,000, with its path from the anchor.
  const leaf = env('LEAF');
  t = Date.now();
  await page.fill('input[name="search"]', leaf);
  await page.waitForSelector('[data-field="map-results"] li');
  timings.search = Date.now() - t;
  const found = await page.$$eval('[data-field="map-results"] li', (ls) => ls.map((l) => l.textContent));
  check(found.length === 1 && found[0].includes(' › https://ia13.map.example › '), `search finds the leaf with its path: ${found}`);
  check(await page.$eval('[data-field="map-tree"]', (e) => e.hidden), 'the tree gives way to the results');
  await shot('map-search');
  await page.fill('input[name="search"]', '');
  await page.selectOption('select[name="status"]', 'blocked');
  await page.waitForSelector('[data-field="map-results"] li');
  const blockedFound = await page.$$eval('[data-field="map-results"] li code', (cs) => cs.map((c) => c.textContent));
  check(blockedFound.length === 1 && blockedFound[0] === env('BLOCKED'), `status filter: ${blockedFound}`);
  await axe('map-filter');
  steps.push('search and filter');

  check(!blocked.length, `requests outside Pharos: ${blocked.join(', ')}`);
  check(!pageErrors.length, `page errors: ${pageErrors.join(' | ')}`);
} catch (e) {
  failure = e;
} finally {
  await browser.close();
}
console.log(JSON.stringify({ ok: !failure, error: failure ? String(failure.stack || failure) : null, steps, blocked, pageErrors, axe: axeReport, timings }));
process.exit(failure ? 1 : 0);
