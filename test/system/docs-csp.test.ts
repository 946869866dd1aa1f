/**
 * /docs (Swagger UI) under its Content-Security-Policy, in a real browser (Debian's chromium driven by
 * playwright-core): the page renders the API's operations, works offline (every request it makes goes to this
 * server), and the browser reports no CSP violation. The policy itself allows this server's scripts, styles and
 * data: images, and nothing else. A screenshot goes to test-output/docs/docs.png.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../helpers/console.js';
import { useStack } from '../helpers/stack.js';

const OUT = path.resolve('test-output', 'docs');
const stack = useStack(test, { workers: false });
let browser: Browser;
stack.onStop(async () => browser?.close());

test.before(async () => {
  browser = await launchChromium();
});

test('the docs page has a CSP that allows only its own scripts, styles and data: images', async (t) => {
  const page = await stack.call('GET', '/docs', { headers: { accept: 'text/html' }, contract: false });
  t.is(page.status, 200);
  const csp = page.headers.get('content-security-policy') ?? '';
  const directives = Object.fromEntries(
    csp
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .map(([name, ...values]) => [name, values.join(' ')]),
  );
  t.deepEqual(directives, {
    'default-src': "'none'",
    'script-src': "'self'",
    'style-src': "'self'",
    'img-src': "'self' data:",
    'font-src': "'self'",
    'connect-src': "'self'",
    'base-uri': "'none'",
    'form-action': "'none'",
    'frame-ancestors': "'none'",
  });
  t.notRegex(csp, /unsafe-inline|unsafe-eval|\*|https?:/);
  // its assets carry it too (a script or style file opened on its own is a document of this origin)
  const asset = await stack.call('GET', '/docs/swagger-ui-bundle.js', { contract: false });
  t.is(asset.headers.get('content-security-policy'), csp);
});

test('Swagger UI renders the operations under that policy, offline, with no CSP violation', async (t) => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const problems: string[] = [];
  const foreign: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
  // offline: a request to any other origin is refused (and noted)
  await context.route(/.*/, (route) => {
    if (route.request().url().startsWith(stack.baseUrl)) return route.continue();
    foreign.push(route.request().url());
    return route.abort();
  });
  await page.addInitScript(() => {
    (window as unknown as { violations: string[] }).violations = [];
    document.addEventListener('securitypolicyviolation', (e) =>
      (window as unknown as { violations: string[] }).violations.push(`${e.violatedDirective} ${e.blockedURI}`),
    );
  });
  await page.goto(`${stack.baseUrl}/docs`);
  const operations = page.locator('.opblock');
  await operations.first().waitFor({ timeout: 30_000 });
  t.true((await operations.count()) > 5, `the operations are listed (${await operations.count()})`);
  t.regex(await page.locator('.opblock-summary-path').first().innerText(), /^\//);
  // open one: its parameters and responses render (more of the UI's code and styles at work)
  await operations.first().locator('.opblock-summary').click();
  await page.locator('.opblock-body').first().waitFor();
  mkdirSync(OUT, { recursive: true });
  await page.screenshot({ path: path.join(OUT, 'docs.png') });
  t.deepEqual(await page.evaluate(() => (window as unknown as { violations: string[] }).violations), [], 'no CSP violation');
  t.deepEqual(problems, []);
  t.deepEqual(foreign, [], 'nothing was loaded from another origin');
  await context.close();
});
