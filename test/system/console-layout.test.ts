/**
 * The console as it looks with real amounts of data, in a real browser (Debian's chromium through playwright-core),
 * measured with the DOM: the request list paged, one line per request even beside the open detail; the traffic chart
 * as wide as the page's content and its legend without empty values; an operator's empty hub list says what to do;
 * the key's copy button clear of the hub's delete button; the operator's metrics shown with the token; the agent line
 * with its space; the certificate page without empty tables and with a way to revoke a request token; environments
 * by their description. Screenshots under test-output/console/layout/ (ignored by git) for people to look at.
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import type { Browser, Page } from 'playwright-core';
import type { Edge } from '../../edge/server.js';
import { enrollAgent, newEnvironment, runAgentHere, type RunningAgent } from '../helpers/agents.js';
import { launchChromium, signedIn as openConsole } from '../helpers/console.js';
import { edgeRequest, publicFrontendCertificate, routedShare, startBackend, startTestEdge, type Backend } from '../helpers/edge.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

const OUT = path.resolve('test-output', 'console', 'layout');
let edge: Edge;
let backend: Backend;
let browser: Browser;
let agent: RunningAgent | undefined;

const stack = useStack(test, { env: { HUB_EDGE_FLUSH_MS: '300' } });
stack.onStop(async () => {
  await agent?.stop();
  await browser?.close();
  await edge?.stop(1000);
  await backend?.close();
});
test.before(async () => {
  mkdirSync(OUT, { recursive: true });
  edge = await startTestEdge();
  backend = await startBackend((req, res) => res.end(`answer to ${req.url}`));
  await publicFrontendCertificate(stack.databaseUrl);
  browser = await launchChromium();
});

const signedIn = (credential: string, viewport = { width: 1280, height: 800 }) => openConsole(browser, stack.baseUrl, credential, viewport);
const shot = (page: Page, name: string) => page.screenshot({ path: path.join(OUT, `${name}.png`), fullPage: true });
const box = async (page: Page, selector: string) => (await page.locator(selector).first().boundingBox())!;

let hub: HubFixture;

test.serial(
  'the operator: an empty hub list says what to do; the new key\'s copy button stays clear of "Delete hub..."; the metrics show with the token',
  async (t) => {
    const page = await signedIn(stack.adminToken);
    const hint = page.locator('.hint', { hasText: 'No hub yet' });
    await hint.waitFor();
    t.regex(await hint.innerText(), /Create hub/);
    await shot(page, 'operator-empty');

    await page.getByLabel('Hub name').fill('acme');
    await page.getByRole('button', { name: 'Create hub' }).click();
    const card = page.locator('article.card', { hasText: 'acme' });
    await card.waitFor();
    t.is(await hint.count(), 0, 'the hint goes once there is a hub');
    await card.getByRole('button', { name: 'New API key' }).click();
    await card.locator('code.api-key').waitFor();
    const copy = (await card.getByRole('button', { name: 'Copy the token' }).boundingBox())!;
    const remove = (await card.getByRole('button', { name: 'Delete hub…' }).boundingBox())!;
    t.true(remove.y >= copy.y + copy.height + 12, `"Delete hub…" at ${remove.y} starts well below "Copy the token" (${copy.y}+${copy.height})`);

    // a link to /metrics answered a browser with 401: the console fetches them with the admin token
    await page.getByRole('link', { name: 'Prometheus metrics (/metrics)' }).click();
    const metrics = page.locator('pre.metrics');
    await metrics.waitFor();
    t.regex(await metrics.innerText(), /^# (HELP|TYPE) /m);
    t.regex(page.url(), /\/console/, 'the console stays; no page of {"error":"unauthorized"}');
    await shot(page, 'operator-hub-and-metrics');
    t.deepEqual(page.problems, []);
    await page.context().close();
  },
);

test.serial('the request list is paged (20 a page) and keeps one line per request beside the open detail; the chart spans the content', async (t) => {
  hub = await stack.hub({ name: 'paged' });
  const share = await routedShare(edge, hub, { name: 'busy', target: backend.url, inspect: true });
  for (let i = 0; i < 45; i++)
    t.is(
      (await edgeRequest(edge.httpPort!, share.host, { path: `/orders/${i}/a-rather-long-path-that-would-wrap-beside-the-detail?query=${'x'.repeat(40)}` }))
        .status,
      200,
    );
  await waitFor(async () => (await hub.call('GET', `${hub.h}/shares/${share.zId}/requests`)).json.length >= 45, { what: '45 recorded requests' });
  await edge.meter.flush();

  const page = await signedIn(hub.token);
  await page.goto(`${stack.baseUrl}/console#/shares/${share.zId}`);
  const rows = page.locator('.request-list tbody tr');
  await waitFor(async () => (await rows.count()) === 20, { what: 'the first page of 20' });
  const pager = page.getByRole('navigation', { name: 'Recorded requests pages' });
  t.is(await pager.locator('span').innerText(), 'Page 1 of 3 (45 requests)');
  t.regex(await rows.first().innerText(), /\/orders\/44\//, 'newest first');
  await pager.getByRole('button', { name: 'Next' }).click();
  t.regex(await rows.first().innerText(), /\/orders\/24\//);
  await pager.getByRole('button', { name: 'Next' }).click();
  t.is(await rows.count(), 5);
  t.true(await pager.getByRole('button', { name: 'Next' }).isDisabled());
  await pager.getByRole('button', { name: 'Previous' }).click();
  t.is(await rows.count(), 20);
  await pager.getByRole('button', { name: 'Previous' }).click();
  const settings = await box(page, 'h2:text-is("Settings")');
  t.true(settings.y < 2000, `Settings at ${settings.y} px, not pushed down by every recorded request`);

  // the chart: as wide as the page's content (no fixed 900 px), its legend names the series without empty values
  const section = await box(page, '.share-page');
  const canvas = await box(page, 'figure.traffic:not(.compact) canvas');
  t.true(canvas.width >= section.width - 4 && canvas.width <= section.width, `chart ${canvas.width} px in a content column of ${section.width} px`);
  const legend = await page.locator('figure.traffic .legend').innerText();
  t.regex(legend, /rx \(received\)\s+tx \(sent\)/);
  t.notRegex(legend, /—|:/);
  t.is(await page.locator('figure.traffic .u-legend').count(), 0, "no uPlot legend (its rows read '—' away from the cursor)");
  await shot(page, 'share-page-paged');

  // one line per row, before and beside the open detail
  const heights = async () => rows.evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).getBoundingClientRect().height));
  const closed = await heights();
  await rows.first().getByRole('button').click();
  await page.locator('aside.detail[data-request]').waitFor();
  const open = await heights();
  t.is(open.length, 20);
  const line = Math.max(...closed);
  t.true(
    open.every((h) => h <= line + 1),
    `rows beside the detail ${JSON.stringify(open)} no taller than without it (${line})`,
  );
  const detail = await box(page, 'aside.detail');
  const list = await box(page, '.inspector .table-wrap');
  t.true(list.x + list.width <= detail.x, `the list (${list.x}+${list.width}) stays left of the detail (${detail.x})`);
  const scroll = await page.locator('.inspector .table-wrap').evaluate((el) => [el.scrollWidth, el.clientWidth]);
  t.true(scroll[0] <= scroll[1], `the list fits its column without scrolling sideways (${scroll})`);
  await shot(page, 'request-detail-open');

  // a phone's width: the chart fits the screen
  const phone = await signedIn(hub.token, { width: 390, height: 844 });
  await phone.goto(`${stack.baseUrl}/console#/shares/${share.zId}`);
  await phone.locator('figure.traffic canvas').waitFor();
  await shot(phone, 'share-page-phone');
  const small = await box(phone, 'figure.traffic canvas');
  t.true(small.x > 0 && small.x + small.width <= 390, `chart from ${small.x} px, ${small.width} px wide, on a screen of 390`);
  t.is(await phone.evaluate(() => document.documentElement.scrollWidth), 390, 'nothing wider than the screen');
  t.deepEqual([...page.problems, ...phone.problems], []);
  await phone.context().close();
  await page.context().close();
});

test.serial('environments by their description; an agent line with its space; the certificate page without empty tables, and a token revoked', async (t) => {
  const envZId = await newEnvironment(hub, 'office network');
  await routedShare(edge, hub, { name: 'office-app', target: backend.url, envZId });
  const work = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'console-layout-'));
  const { dir, id } = await enrollAgent(hub, envZId, work);
  agent = runAgentHere(dir, [edge.httpsPort!]);
  await agent.printed(/connected to edge/);

  const page = await signedIn(hub.token);
  const row = page.locator('tr[data-share]', { hasText: 'office-app' });
  await row.waitFor();
  await waitFor(async () => (await row.locator('td[data-label="Environment"]').innerText()).trim() === 'office network', {
    what: 'the environment by its description',
  });
  await shot(page, 'shares-environment');

  await page.getByRole('link', { name: 'Environments & agents' }).click();
  const line = page.locator(`li[data-agent="${id}"]`);
  await waitFor(async () => /connected since/.test(await line.innerText().catch(() => '')), { what: 'the agent connected', timeoutMs: 30_000 });
  t.regex(await line.evaluate((li) => li.textContent ?? ''), new RegExp(`agent ${id} connected since`));
  // its place in the environment's pool
  t.regex(await line.locator('[data-pool]').innerText(), /^weight 1, priority 0$/);
  await shot(page, 'environments-agent');

  await page.getByRole('link', { name: 'Certificates' }).click();
  const certificates = page.locator('section[aria-labelledby="h-Client certificates"]');
  await certificates.getByText('No client certificates yet').waitFor();
  t.is(await certificates.locator('table').count(), 0, 'no empty table under the sentence');
  const tokens = page.locator('section[aria-labelledby="h-Certificate request tokens"]');
  t.is(await tokens.locator('table').count(), 0);
  await page.getByLabel('Name', { exact: true }).fill('laptop');
  await page.getByRole('button', { name: 'Create token' }).click();
  t.regex(await page.locator('.reveal').innerText(), /frontend-ca\.pem/);
  const made = tokens.locator('tr[data-token]', { hasText: 'laptop' });
  await made.waitFor();
  const tokenId = (await made.getAttribute('data-token'))!;
  await shot(page, 'certificates-token');
  await made.getByRole('button', { name: 'Revoke laptop' }).click();
  await waitFor(async () => (await made.count()) === 0, { what: 'the token gone from the list' });
  t.is((await hub.call('GET', `${hub.h}/certificate-request-tokens/${tokenId}`)).status, 404, 'deleted through the API');
  t.deepEqual(page.problems, []);
  await page.context().close();
});
