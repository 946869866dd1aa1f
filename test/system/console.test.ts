/**
 * The web console in a real browser (Debian's chromium driven by playwright-core): sign in as a hub and see a share
 * made through the API, send traffic through the edge and watch its sparkline change, create a certificate request
 * token and read the command, sign in as the operator and create a hub and a key; each view is saved as a
 * screenshot under test-output/console/ (1366x768 and a phone's width) for people to look at.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import type { Browser, Page } from 'playwright-core';
import type { Edge } from '../../edge/server.js';
import { edgeRequest, routedShare, startBackend, startTestEdge, type Backend } from '../helpers/edge.js';
import { launchChromium, signedIn as openConsole } from '../helpers/console.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

const OUT = path.resolve('test-output', 'console');
let edge: Edge;
let backend: Backend;
let hub: HubFixture;
let browser: Browser;
let share: { zId: string; host: string };

test.before(async () => {
  mkdirSync(OUT, { recursive: true });
});
const stack = useStack(test, { env: { HUB_EDGE_FLUSH_MS: '500' } });
stack.onStop(async () => {
  await browser?.close();
  await edge?.stop(1000);
  await backend?.close();
});
test.before(async () => {
  edge = await startTestEdge();
  backend = await startBackend((_req, res) => res.end('x'.repeat(5000)));
  hub = await stack.hub({ ipsec: true, name: 'acme' });
  share = await routedShare(edge, hub, { name: 'website', target: backend.url });
  browser = await launchChromium();
});

const signedIn = (credential: string, viewport = { width: 1366, height: 768 }) => openConsole(browser, stack.baseUrl, credential, viewport);

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(OUT, `${name}.png`), fullPage: true });

test.serial('a hub signs in and sees its share; traffic through the edge moves its sparkline', async (t) => {
  const page = await signedIn(hub.token);
  const row = page.locator(`tr[data-share="${share.zId}"]`);
  await row.waitFor();
  t.regex(await row.innerText(), /website/);
  t.regex(await row.innerText(), /ACTIVE/);
  t.regex(await row.innerText(), /public/);
  t.is(await page.evaluate(() => sessionStorage.length), 1, 'the credential is in session storage only');
  t.is(await page.evaluate(() => localStorage.length), 0);
  t.false((await page.context().cookies()).length > 0, 'no cookie holds it');

  const before = Number(await row.locator('.sparkline').getAttribute('data-bytes'));
  for (let i = 0; i < 5; i++) t.is((await edgeRequest(edge.httpPort!, share.host)).status, 200);
  await edge.meter.flush();
  // the view polls the sparklines endpoint; the chart's bytes grow without a reload
  await waitFor(async () => Number(await row.locator('.sparkline').getAttribute('data-bytes')) > before + 5 * 5000, {
    timeoutMs: 30_000,
    what: 'the sparkline moving',
  });
  t.regex(await row.locator('figcaption').innerText(), /tx \d/);
  await shot(page, 'hub-shares');
  t.deepEqual(page.problems, []);
  await page.context().close();
});

test.serial("a hub creates a certificate request token and reads the recipient's command; every hub view renders", async (t) => {
  const page = await signedIn(hub.token);
  await page.getByRole('link', { name: 'Certificates' }).click();
  await page.getByLabel('Name', { exact: true }).fill('laptop');
  await page.getByRole('button', { name: 'Create token' }).click();
  const command = await page.locator('#enroll-command').innerText();
  // the served package, then its command: never `npx edgehub` (a public registry's name)
  t.regex(command, /^npm install -g http:\/\/127\.0\.0\.1:\d+\/downloads\/edgehub-agent\.tgz\nedgehub enroll eyJ[\w-]+\.[\w-]+\.[\w-]+$/);
  const tokens = await hub.call('GET', `${hub.h}/certificate-request-tokens`);
  t.true(
    tokens.json.content.some((x: { name: string }) => x.name === 'laptop'),
    'made through the API',
  );
  await shot(page, 'hub-certificates');

  // an agent enrollment from the environments view
  await page.getByRole('link', { name: 'Environments & agents' }).click();
  await page.getByRole('button', { name: 'Add an agent' }).first().click();
  t.regex(
    await page.locator('.reveal pre').first().innerText(),
    /^npm install -g http:\/\/127\.0\.0\.1:\d+\/downloads\/edgehub-agent\.tgz\nedgehub agent enroll eyJ/,
  );
  await shot(page, 'hub-environments');

  for (const [link, heading] of [
    ['Custom frontends', 'Custom frontends'],
    ['IPsec', 'IPsec tunnels'],
    ['Health checks', 'Health checks'],
    ['Executions', 'Executions'],
  ]) {
    await page.getByRole('link', { name: link }).click();
    await page.getByRole('heading', { name: heading }).waitFor();
    await shot(page, `hub-${link.toLowerCase().replace(/\s+/g, '-')}`);
  }
  // executions: the audit trail, filtered by status
  await page.getByLabel('Status').selectOption('SUCCEEDED');
  await waitFor(async () => (await page.locator('tbody tr').count()) > 0, { what: 'executions listed' });
  t.false((await page.locator('tbody').innerText()).includes('FAILED'));
  t.deepEqual(page.problems, []);
  await page.context().close();
});

test.serial('reach: an environment reached only through agents shows it, and its share says no agent is connected instead of ACTIVE', async (t) => {
  const env = await hub.call('POST', `${hub.h}/environments`, { body: { description: 'closed', reach: 'agent' } });
  t.is(env.status, 201);
  const closed = await routedShare(edge, hub, { name: 'private-app', target: backend.url, envZId: env.json.envZId });
  const page = await signedIn(hub.token);
  const row = page.locator(`tr[data-share="${closed.zId}"]`);
  await row.locator('[data-no-agent]').waitFor();
  t.regex(await row.innerText(), /no agent connected/);
  t.notRegex(await row.innerText(), /ACTIVE/);
  t.regex(await page.locator(`tr[data-share="${share.zId}"]`).innerText(), /ACTIVE/, 'a share of an edge-reach environment stays ACTIVE');
  await page.getByRole('link', { name: 'Environments & agents' }).click();
  const card = page.locator(`article[data-env="${env.json.envZId}"]`);
  await card.waitFor();
  t.regex(await card.locator('[data-reach]').innerText(), /reach: agents \(none connected\)/);
  t.deepEqual(page.problems, []);
  await page.context().close();
});

test.serial('the operator signs in, creates a hub and a key (shown once); a phone-width view; sign out forgets the credential', async (t) => {
  const page = await signedIn(stack.adminToken);
  await page.getByLabel('Hub name').fill('from-console');
  await page.getByRole('button', { name: 'Create hub' }).click();
  const card = page.locator('article.card', { hasText: 'from-console' });
  await card.waitFor();
  const listed = await stack.call('GET', '/admin/v1/hubs?size=1000', { auth: stack.admin });
  const made = listed.json.content.find((h: { name: string }) => h.name === 'from-console');
  t.truthy(made, 'created through the operator API');
  await card.getByRole('button', { name: 'New API key' }).click();
  const token = await card.locator('code.api-key').innerText();
  t.regex(token, /^ehk_/);
  const keys = await stack.call('GET', `/admin/v1/hubs/${made.id}/api-keys`, { auth: stack.admin });
  t.is(keys.json.length, 1);
  t.truthy(page.getByRole('link', { name: /API reference/ }));
  await shot(page, 'operator-hubs');

  const phone = await signedIn(hub.token, { width: 390, height: 844 });
  await phone.locator(`tr[data-share="${share.zId}"]`).waitFor();
  await shot(phone, 'hub-shares-phone');
  await phone.context().close();

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('API key or admin token').waitFor();
  t.is(await page.evaluate(() => sessionStorage.length), 0);
  t.deepEqual(page.problems, []);
  await page.context().close();
});

test.serial('a wrong credential is refused in words, and the page loads nothing from elsewhere', async (t) => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const foreign: string[] = [];
  page.on('request', (r) => !r.url().startsWith(stack.baseUrl) && foreign.push(r.url()));
  const answer = await page.goto(`${stack.baseUrl}/console`);
  t.regex(answer!.headers()['content-security-policy'] ?? '', /default-src 'self'/);
  await page.getByLabel('API key or admin token').fill('not-a-key');
  await page.getByRole('button', { name: 'Sign in' }).click();
  t.regex(await page.getByRole('alert').innerText(), /neither an API key/);
  t.deepEqual(foreign, []);
  // GET / sends a browser to the console, and tells a program where things are
  const root = await stack.call('GET', '/');
  t.is(root.json.console, '/console');
  t.is((await stack.call('GET', '/console/..%2Fpackage.json')).status, 404);
  t.is((await stack.call('GET', '/console/nope.js')).status, 404);
  await context.close();
});
