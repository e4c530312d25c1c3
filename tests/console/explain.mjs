// The chain explainer page (issue 40) in headless Debian Chromium (playwright-core), driven by
// tests/explain/console.rs against a real three-level federation: the network is closed
// except for the resolver's console (the page must load no URL from a statement, such as the
// leaf's hostile logo_uri), axe-core runs on the page, and screenshots go to SCREENSHOTS.
//
// Input (environment): PHAROS_URL (the resolver's admin listener), SUBJECT, ANCHOR,
// HOSTILE_NAME (the leaf's client_name, markup that must stay text), OPERATOR_LINE (JSON:
// {parameter, operator, before, after} expected in the operator table), BROKEN_SUBJECT (an
// entity whose chain fails), BROKEN_STEP (text the failing step must contain),
// SCREENSHOTS (directory), CHROMIUM (browser binary).
// Output: one JSON line on stdout ({ok, steps, blocked, axe}); exit status 1 on failure.

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
const allowed = new Set([new URL(BASE).origin]);

setTimeout(() => {
  console.log(JSON.stringify({ ok: false, error: 'explain console test did not finish within 5 minutes' }));
  process.exit(1);
}, 300_000).unref();

const steps = [];
const blocked = [];
const pageErrors = [];
const axeReport = {};
mkdirSync(SHOTS, { recursive: true });

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-dev-shm-usage'],
});
let failure = null;
try {
  const context = await browser.newContext({ viewport: { width: 1366, height: 900 } });
  await context.route('**/*', (route) => {
    const url = route.request().url();
    let origin = '';
    try { origin = new URL(url).origin; } catch { /* data: and the like */ }
    if (allowed.has(origin)) return route.continue();
    blocked.push(url);
    return route.abort('internetdisconnected');
  });
  const page = await context.newPage();
  page.on('pageerror', (e) => pageErrors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 40[0-9]/.test(m.text())) pageErrors.push(`console: ${m.text()}`);
  });
  page.on('dialog', (d) => { pageErrors.push(`unexpected dialog: ${d.message()}`); d.dismiss(); });
  const axe = async (name) => {
    if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) await page.evaluate(axeSource);
    const r = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
    const serious = r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    axeReport[name] = r.violations.map((v) => `${v.impact}:${v.id}`);
    check(!serious.length, `axe on ${name}: ${JSON.stringify(serious.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) })))}`);
  };
  const shot = (name) => page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });
  const explainFor = async (sub, anchor) => {
    await page.fill('[name="sub"]', sub);
    await page.fill('[name="anchor"]', anchor);
    await page.click('#view form button[type="submit"]');
    await until(page, () => !!document.querySelector('#explanation [data-result]')
      && !document.querySelector('#explanation[aria-busy]'));
  };

  // The page is in the navigation (no admin user yet: the API is open on loopback).
  await page.goto(`${BASE}/console/`);
  await page.waitForSelector('#view[data-page="overview"]:not([aria-busy])');
  await page.click('nav a[href="#/explain"]');
  await page.waitForSelector('#view[data-page="explain"]:not([aria-busy])');
  check((await page.getAttribute('nav a[href="#/explain"]', 'aria-current')) === 'page', 'nav marks the page');
  await axe('explain-form');
  steps.push('page');

  // A chain that resolves: each operator with before and after, hostile text kept as text.
  await explainFor(env('SUBJECT'), env('ANCHOR'));
  check((await page.getAttribute('#explanation [data-result]', 'data-result')) === 'resolved', 'resolved');
  const text = await page.textContent('#explanation');
  check(text.includes('Resolves'), 'the result is in words');
  const want = JSON.parse(env('OPERATOR_LINE'));
  const rows = await page.$$eval('#explanation table tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  const row = rows.find((r) => r[0] === `metadata.openid_relying_party.${want.parameter}` && r[1] === want.operator);
  check(row, `operator row ${want.parameter} ${want.operator}: ${JSON.stringify(rows)}`);
  check(row[3] === JSON.stringify(want.before) && row[4] === JSON.stringify(want.after), `before/after ${JSON.stringify(row)}`);
  check(text.includes(env('HOSTILE_NAME')), 'the hostile name is shown as text');
  check((await page.$$('#explanation img, #explanation script, #explanation a[href], #explanation iframe')).length === 0, 'no markup from statements');
  await axe('explain-resolved');
  await shot('20-explain-resolved');
  steps.push('resolved');

  // A chain that fails: the failing step in words, highlighted by more than colour.
  await explainFor(env('BROKEN_SUBJECT'), env('ANCHOR'));
  check((await page.getAttribute('#explanation [data-result]', 'data-result')) === 'failed', 'failed');
  const stepText = await page.textContent('#explanation [data-failed="step"]');
  check(stepText.includes(env('BROKEN_STEP')), `failing step named: ${stepText}`);
  check((await page.textContent('#explanation-result, #explain-result')).includes('Does not resolve'), 'failure in words');
  await axe('explain-failed');
  await shot('21-explain-failed');
  steps.push('failed');

  // Dark mode: the same accessibility bar.
  await page.emulateMedia({ colorScheme: 'dark' });
  await axe('explain-failed-dark');
  await shot('22-explain-failed-dark');
  steps.push('dark mode');

  check(!blocked.length, `requests outside Pharos: ${blocked.join(', ')}`);
  check(!pageErrors.length, `page errors: ${pageErrors.join(' | ')}`);
} catch (e) {
  failure = e;
} finally {
  await browser.close();
}
console.log(JSON.stringify({ ok: !failure, error: failure ? String(failure.stack || failure) : null, steps, blocked, pageErrors, axe: axeReport }));
process.exit(failure ? 1 : 0);

/** Waits until `fn(arg)` is true in the page (evaluate, not waitForFunction: the CSP forbids eval). */
async function until(page, fn, arg) {
  for (let i = 0; i < 300; i += 1) {
    if (await page.evaluate(fn, arg)) return;
    await new Promise((r) => { setTimeout(r, 100); });
  }
  throw new Error(`timed out waiting for ${String(fn).slice(0, 160)}`);
}
