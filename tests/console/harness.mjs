// What every browser script of the console tests shares: headless Debian Chromium through
// playwright-core with the network closed except for the Pharos origins under test (anything
// else is aborted and recorded), page errors and unexpected dialogs recorded, axe-core on
// demand, screenshots, a five-minute guard, and the one-line JSON report on stdout.

import { readFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';

const require = createRequire(import.meta.url);
const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/** An environment variable the script needs. */
export function env(k) {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
}

/** Fails the script with `what` unless `cond`. */
export function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

/**
 * Waits until `fn(arg)` is true in the page. (Playwright's waitForFunction evaluates a string
 * in the page, which the console's Content Security Policy rightly forbids; evaluate does not.)
 */
export async function until(page, fn, arg) {
  for (let i = 0; i < 150; i += 1) {
    if (await page.evaluate(fn, arg)) return;
    await new Promise((r) => { setTimeout(r, 100); });
  }
  throw new Error(`timed out waiting for ${String(fn).slice(0, 160)}`);
}

/**
 * Runs `body({ page, axe, shot, report })` in a fresh browser whose network reaches only
 * `origins`; `ignoreConsole` matches browser console errors that are expected (an API's 4xx
 * answer to a probe). Prints the report ({ok, error, blocked, pageErrors, axe, ...report})
 * and exits 1 on failure, including a request outside `origins` or an unexpected page error.
 */
export async function run({ name, origins, screenshots, ignoreConsole = /$^/ }, body) {
  setTimeout(() => {
    console.log(JSON.stringify({ ok: false, error: `${name} did not finish within 5 minutes` }));
    process.exit(1);
  }, 300_000).unref();
  const allowed = new Set(origins.map((o) => new URL(o).origin));
  const blocked = [];
  const pageErrors = [];
  const axeReport = {};
  const report = {};
  mkdirSync(screenshots, { recursive: true });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
  let failure = null;
  try {
    const context = await browser.newContext({ viewport: { width: 1366, height: 900 }, acceptDownloads: true });
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
      if (m.type() === 'error' && !ignoreConsole.test(m.text())) pageErrors.push(`console: ${m.text()}`);
    });
    page.on('dialog', (d) => { pageErrors.push(`unexpected dialog: ${d.message()}`); d.dismiss(); });
    const axe = async (label) => {
      if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) await page.evaluate(axeSource);
      const r = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
      const serious = r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
      axeReport[label] = r.violations.map((v) => `${v.impact}:${v.id}`);
      check(!serious.length, `axe on ${label}: ${JSON.stringify(serious.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) })))}`);
    };
    const shot = (label, fullPage = true) => page.screenshot({ path: `${screenshots}/${label}.png`, fullPage });
    await body({ page, axe, shot, report });
    check(!blocked.length, `requests outside Pharos: ${blocked.join(', ')}`);
    check(!pageErrors.length, `page errors: ${pageErrors.join(' | ')}`);
  } catch (e) {
    failure = e;
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify({ ok: !failure, error: failure ? String(failure.stack || failure) : null, blocked, pageErrors, axe: axeReport, ...report }));
  process.exit(failure ? 1 : 0);
}
