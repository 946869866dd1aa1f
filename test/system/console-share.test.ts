/**
 * The console as a place to work, in a real browser (Debian's chromium through playwright-core): a hub creates a
 * mutual-TLS share with inspection, traffic sent with a client certificate shows in the share's chart and its
 * requests list (live), one request is opened (headers, JSON and hex bodies) and replayed; health checks are made and
 * run; the operator revokes an API key and reads who the queue UI asks for. A screenshot of each step is kept under
 * test-output/console/share-page/ (ignored by git) to be looked at.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import type { Browser, Page } from 'playwright-core';
import type { Edge } from '../../edge/server.js';
import { edgeRequest, publicFrontendCertificate, readBody, startBackend, startTestEdge, type Backend } from '../helpers/edge.js';
import { launchChromium, signedIn as openConsole } from '../helpers/console.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';
import { keyAndCsr } from '../helpers/tlsClient.js';

const OUT = path.resolve('test-output', 'console', 'share-page');
let edge: Edge;
let backend: Backend;
let hub: HubFixture;
let browser: Browser;
let step = 0;

const stack = useStack(test, { env: { HUB_EDGE_FLUSH_MS: '300' } });
stack.onStop(async () => {
  await browser?.close();
  await edge?.stop(1000);
  await backend?.close();
});
test.before(async () => {
  mkdirSync(OUT, { recursive: true });
  edge = await startTestEdge();
  backend = await startBackend(async (req, res) => {
    const body = await readBody(req);
    if (req.url === '/missing') {
      res.statusCode = 404;
      return res.end('no such thing');
    }
    if (req.url === '/binary') {
      res.setHeader('content-type', 'application/octet-stream');
      return res.end(Buffer.from([0x00, 0xff, 0x10, 0x80, 0xc3, 0x28]));
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ path: req.url, received: body.length, who: req.headers['x-client-certificate-name'] ? 'a client certificate' : 'nobody' }));
  });
  hub = await stack.hub({ name: 'acme' });
  await publicFrontendCertificate(stack.databaseUrl);
  browser = await launchChromium();
});

const signedIn = (credential: string) => openConsole(browser, stack.baseUrl, credential);

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(OUT, `${String(++step).padStart(2, '0')}-${name}.png`), fullPage: true });

test.serial(
  'create a mutual-TLS share with inspection, send traffic with a client certificate, read it in the chart and the requests, open one, replay it',
  async (t) => {
    const page = await signedIn(hub.token);
    await page.getByRole('button', { name: 'New share' }).click();
    await page
      .getByRole('form', { name: 'New share' })
      .waitFor()
      .catch(async (err) => {
        await shot(page, 'failed');
        throw err;
      });
    await page.getByLabel('Share name').fill('orders');
    await page.getByLabel('Target URL').fill(backend.url);
    await page.getByRole('radio', { name: /Mutual TLS/ }).check();
    await page.getByRole('checkbox', { name: /Inspect requests/ }).check();
    await shot(page, 'new-share-form');
    await page.getByRole('button', { name: 'Create share' }).click();
    const pageRoot = page.locator('[data-share-page]');
    await pageRoot.waitFor();
    const zId = (await pageRoot.getAttribute('data-share-page'))!;
    const share = (await hub.call('GET', `${hub.h}/shares/${zId}`)).json;
    t.true(share.mutualTls, 'made through the API with mutual TLS');
    t.true(share.inspect);
    t.regex(share.frontendEndpoint, /^https:/);
    await waitFor(async () => (await hub.call('GET', `${hub.h}/shares/${zId}`)).json.status === 'ACTIVE', { what: 'share ACTIVE' });
    const host = new URL(share.frontendEndpoint).hostname;
    await waitFor(async () => edge.routes.lookup(host), { what: 'the edge routing it' });
    await page.getByText('No requests recorded yet').waitFor();
    await shot(page, 'share-page-empty');

    // a client certificate of the hub, and traffic with it (refused without)
    const { keyPem, csrPem } = await keyAndCsr('/CN=console-client');
    const cert = await hub.call('POST', `${hub.h}/client-certificates`, { body: { name: 'console-client', value: csrPem } });
    t.is(cert.status, 201);
    const value = (await hub.call('GET', `${hub.h}/client-certificates/${cert.json.id}`)).json.value;
    const tls = { cert: value, key: keyPem, rejectUnauthorized: false };
    await waitFor(async () => (await edgeRequest(edge.httpsPort!, host, { tls }).catch(() => ({ status: 0 }))).status === 200, {
      what: 'the certificate admitted',
    });
    t.is((await edgeRequest(edge.httpsPort!, host, { tls: { rejectUnauthorized: false } })).status, 403, 'no certificate, no entry');
    for (let i = 0; i < 6; i++) {
      const r = await edgeRequest(edge.httpsPort!, host, {
        tls,
        method: 'POST',
        path: `/orders/${i}`,
        body: JSON.stringify({ item: 'tea', n: i, pad: 'x'.repeat(20_000) }),
        headers: { 'content-type': 'application/json', authorization: 'Bearer never-shown' },
      });
      t.is(r.json.who, 'a client certificate');
    }
    t.is((await edgeRequest(edge.httpsPort!, host, { tls, path: '/missing' })).status, 404);
    t.is((await edgeRequest(edge.httpsPort!, host, { tls, path: '/binary' })).status, 200);
    await edge.meter.flush();

    // the chart moves (it polls the metrics API), the list fills from the live stream
    const chart = page.locator('figure.traffic').first();
    await waitFor(async () => Number(await chart.getAttribute('data-bytes')) > 6 * 20_000, { timeoutMs: 30_000, what: 'the traffic chart showing the bytes' });
    t.regex(await chart.locator('figcaption').innerText(), /rx [\d.]+ KiB, tx [\d.]+ .* peak/);
    const rows = page.locator('table.request-list tbody tr');
    await waitFor(async () => (await rows.count()) >= 8, { what: 'the requests listed live' });
    t.regex(await rows.first().innerText(), /GET \/binary/);
    await shot(page, 'traffic-and-requests');

    // filters: status and path
    await page.getByLabel('Path contains').fill('/orders/3');
    await waitFor(async () => (await rows.count()) === 1, { what: 'the path filter' });
    await page.getByLabel('Path contains').fill('');
    await page.getByLabel('Status').selectOption('4xx');
    // the 404 of the target, and the edge's own 403 to the client without a certificate (refusals are listed too)
    await waitFor(async () => (await rows.count()) === 2, { what: 'the status filter' });
    const failures = await rows.allInnerTexts();
    t.true(
      failures.some((r) => /GET \/missing[\s\S]*404/.test(r)),
      failures.join(' | '),
    );
    t.true(
      failures.some((r) => /GET \/\s[\s\S]*403/.test(r)),
      failures.join(' | '),
    );
    await page.getByLabel('Status').selectOption('');

    // one request: headers (credentials redacted), the JSON body, timing and edge
    await page.getByRole('button', { name: 'POST /orders/5' }).click();
    const detail = page.locator('aside.detail[data-request]');
    await detail.waitFor();
    const text = await detail.innerText();
    t.regex(text, /authorization\s+\[redacted\]/i);
    t.regex(text, /x-client-certificate-name\s+\[redacted\]/i);
    t.false(text.includes('never-shown'));
    t.regex(text, /\d+(\.\d+)? ms/);
    t.regex(text, new RegExp(`edge ${edge.inspection!.capture.edge.replace(/[/.]/g, '\\$&')}`));
    t.is(await detail.locator('pre.body').first().getAttribute('data-mode'), 'json');
    t.regex(await detail.locator('pre.body').first().innerText(), /"item": "tea"/);
    await shot(page, 'request-detail');

    // replay it: a new exchange, marked as a replay, at the top
    const before = await rows.count();
    await detail.getByRole('button', { name: 'Replay' }).click();
    await waitFor(async () => (await page.locator('aside.detail').innerText()).includes('replay of'), { what: 'the replay opened' });
    await waitFor(async () => (await rows.count()) > before, { what: 'the replay listed' });
    t.regex(await rows.first().innerText(), /POST \/orders\/5[\s\S]*replay/);
    const listed = (await hub.call('GET', `${hub.h}/shares/${zId}/requests`)).json;
    t.truthy(listed[0].replayOf, 'recorded through the API as a replay');
    t.is(listed[0].status, 200);
    await shot(page, 'replayed');

    // a body that is not UTF-8 is shown as hex
    await page.getByRole('button', { name: 'GET /binary' }).click();
    await waitFor(
      async () =>
        (await page.locator('aside.detail pre.body').count()) > 0 && (await page.locator('aside.detail pre.body').last().getAttribute('data-mode')) === 'hex',
      { what: 'the hex view' },
    );
    t.regex(await page.locator('aside.detail pre.body').last().innerText(), /00 ff 10 80 c3 28/);
    await shot(page, 'binary-as-hex');

    // settings: inspection off, saved through PATCH
    await page.getByRole('checkbox', { name: /Inspect requests/ }).uncheck();
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('Saved: every edge applies it').waitFor();
    t.false((await hub.call('GET', `${hub.h}/shares/${zId}`)).json.inspect);
    await shot(page, 'settings-saved');

    // the hub's list: every share's traffic over the chosen window
    await page.getByRole('link', { name: 'Shares', exact: true }).first().click();
    const row = page.locator(`tr[data-share="${zId}"]`);
    await row.waitFor();
    await page.getByRole('group', { name: 'Traffic window' }).getByRole('button', { name: '24 h' }).click();
    await waitFor(async () => Number(await row.locator('figure.traffic').getAttribute('data-bytes')) > 0, { what: 'the list chart' });
    t.regex(await row.innerText(), /mutual TLS/);
    t.notRegex(await row.innerText(), /inspected/, 'inspection was turned off');
    await shot(page, 'share-list-24h');
    t.deepEqual(page.problems, []);
    await page.context().close();
  },
);

test.serial('health checks are created and run from the console; empty states say what to do', async (t) => {
  const page = await signedIn(hub.token);
  await page.getByRole('link', { name: 'Health checks' }).click();
  await page.getByText('No health checks yet').waitFor();
  await page.getByLabel('Check name').fill('backend up');
  await page.getByLabel('Target').fill(backend.url);
  await page.getByLabel('Path', { exact: true }).fill('/health');
  await page.getByRole('button', { name: 'Create check' }).click();
  await page.getByRole('button', { name: 'Run backend up now' }).click();
  await waitFor(async () => /SUCCESS/.test(await page.locator('tbody').innerText()), { timeoutMs: 30_000, what: 'the check run' });
  const checks = (await hub.call('GET', `${hub.h}/health-checks`)).json.content;
  t.is(checks[0].name, 'backend up');
  await shot(page, 'health-checks');
  t.deepEqual(page.problems, []);
  await page.context().close();
});

test.serial('the operator revokes an API key and is told the queue UI user name', async (t) => {
  const other = await stack.hub({ name: 'to-revoke' });
  const page = await signedIn(stack.adminToken);
  const card = page.locator(`article.card[data-hub="${other.hubId}"]`);
  await card.waitFor();
  t.regex(await page.locator('.links').innerText(), /user is admin/);
  t.is((await other.call('GET', `${other.h}/shares`)).status, 200);
  await card.getByRole('button', { name: /^Revoke / }).click();
  await waitFor(async () => /revoked/.test(await card.innerText()), { what: 'the key shown revoked' });
  t.is((await other.call('GET', `${other.h}/shares`)).status, 401, 'the key stops working');
  await shot(page, 'operator-revoked-key');
  t.deepEqual(page.problems, []);
  await page.context().close();
});

test.serial('the share page edits the traffic policy: saved through PATCH, applied by the edge, a bad value shown and nothing changed', async (t) => {
  const created = await hub.call('POST', `${hub.h}/shares`, {
    body: { name: 'guarded', frontendIds: [(await hub.call('GET', `${hub.h}/frontends`)).json[0].id], target: backend.url },
  });
  t.is(created.status, 201, created.text);
  const zId = created.json.zId as string;
  await waitFor(async () => (await hub.call('GET', `${hub.h}/shares/${zId}`)).json.status === 'ACTIVE', { what: 'share ACTIVE' });
  const host = new URL(created.json.frontendEndpoint).hostname;
  await waitFor(async () => edge.routes.lookup(host), { what: 'the edge routing it' });
  const page = await signedIn(hub.token);
  await page.goto(`${stack.baseUrl}/console#/shares/${zId}`);
  const form = page.getByRole('form', { name: 'Traffic policy' });
  await form.waitFor();

  await form.getByLabel('Allowed networks').fill('10.0.0.0/8');
  await form.getByLabel('Basic auth users').fill('demo:console-pass');
  await form.getByLabel('Rate limit (requests)').fill('1000');
  await form.getByRole('button', { name: 'Save policy' }).click();
  await form.getByText('Policy saved').waitFor();
  t.deepEqual((await hub.call('GET', `${hub.h}/shares/${zId}`)).json.policy, {
    ipAllow: ['10.0.0.0/8'],
    rateLimit: { requests: 1000, per: 'PT1M', by: 'client-ip' },
    basicAuth: [{ user: 'demo' }],
  });
  await waitFor(async () => (await edgeRequest(edge.httpPort!, host)).status === 403, { timeoutMs: 2000, what: 'the edge refusing 127.0.0.1' });
  await shot(page, 'policy-saved');

  // the user kept without its password, the network opened
  await form.getByLabel('Allowed networks').fill('127.0.0.0/8\n::1/128');
  await form.getByRole('button', { name: 'Save policy' }).click();
  await form.getByText('Policy saved').waitFor();
  await waitFor(async () => (await edgeRequest(edge.httpPort!, host)).status === 401, { timeoutMs: 2000, what: 'the edge asking for credentials' });
  const served = await edgeRequest(edge.httpPort!, host, { headers: { authorization: `Basic ${Buffer.from('demo:console-pass').toString('base64')}` } });
  t.is(served.status, 200);
  t.deepEqual(page.problems, []);

  // a bad value: the API's message naming it, and nothing changed
  await form.getByLabel('Allowed networks').fill('not-a-network');
  await form.getByRole('button', { name: 'Save policy' }).click();
  await t.notThrowsAsync(form.getByRole('alert').filter({ hasText: '$.policy.ipAllow[0]' }).waitFor());
  t.deepEqual((await hub.call('GET', `${hub.h}/shares/${zId}`)).json.policy.ipAllow, ['127.0.0.0/8', '::1/128']);
  await shot(page, 'policy-refused');
  await page.context().close();
});
