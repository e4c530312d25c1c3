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

import { check, env, run, until } from './harness.mjs';

const BASE = env('PHAROS_URL');
const SHOTS = env('SCREENSHOTS');

await run({ name: 'explain console test', origins: [BASE], screenshots: SHOTS, ignoreConsole: /status of 40[0-9]/ }, async ({ page, axe, shot, report }) => {
  const steps = [];
  report.steps = steps;
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
});


