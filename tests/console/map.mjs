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

import { check, env, run, until } from './harness.mjs';

const BASE = env('PHAROS_URL');
const SHOTS = env('SCREENSHOTS');

await run({ name: 'map test', origins: [BASE], screenshots: SHOTS, ignoreConsole: /status of 401/ }, async ({ page, axe, shot, report }) => {
  const steps = [];
  report.steps = steps;
  const timings = {};
  report.timings = timings;

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
  await shot('map-overview', false);
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
  await shot('map-expanded', false);
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
  await shot('map-search', false);
  await page.fill('input[name="search"]', '');
  await page.selectOption('select[name="status"]', 'blocked');
  await page.waitForSelector('[data-field="map-results"] li');
  const blockedFound = await page.$$eval('[data-field="map-results"] li code', (cs) => cs.map((c) => c.textContent));
  check(blockedFound.length === 1 && blockedFound[0] === env('BLOCKED'), `status filter: ${blockedFound}`);
  await axe('map-filter');
  steps.push('search and filter');
});

