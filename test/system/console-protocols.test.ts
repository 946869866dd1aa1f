/**
 * The console for what a share carries besides HTTP, in a real browser (Debian's chromium through playwright-core):
 * a TCP share made in the form (login is not offered, nothing to inspect), its tcp:// address and the line to
 * connect with, bytes through the edge's port by that line's host and port, then mutual TLS turned on in its
 * settings; a share that speaks HTTP/2 to its target (gRPC) made in the form. Screenshots go under
 * test-output/console/protocols/ (ignored by git).
 */
import { mkdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import test from 'ava';
import type { Browser, Page } from 'playwright-core';
import type { Edge } from '../../edge/server.js';
import { freeRange, publicFrontendCertificate, startTestEdge } from '../helpers/edge.js';
import { launchChromium, signedIn as openConsole } from '../helpers/console.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

const OUT = path.resolve('test-output', 'console', 'protocols');
const tcpPorts = await freeRange(2);
let edge: Edge;
let hub: HubFixture;
let browser: Browser;
let echo: net.Server;
let step = 0;

const stack = useStack(test, { env: { HUB_EDGE_TCP_PORTS: `${tcpPorts}-${tcpPorts + 1}`, HUB_EDGE_FLUSH_MS: '600000' } });
stack.onStop(async () => {
  await browser?.close();
  await edge?.stop(1000);
  echo?.close();
});
test.before(async () => {
  mkdirSync(OUT, { recursive: true });
  edge = await startTestEdge();
  echo = net.createServer((socket) => socket.pipe(socket));
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  hub = await stack.hub({ name: 'protocols' });
  await publicFrontendCertificate(stack.databaseUrl);
  browser = await launchChromium();
});

const signedIn = (credential: string) => openConsole(browser, stack.baseUrl, credential);

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(OUT, `${String(++step).padStart(2, '0')}-${name}.png`), fullPage: true });

/** Sends `text` to host:port, half-closes, and resolves with what came back ('' when refused). */
function through(host: string, port: number, text: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, host, () => socket.end(text));
    let got = '';
    socket.setTimeout(5000, () => socket.destroy());
    socket.on('data', (d) => (got += d));
    socket.once('error', () => resolve(''));
    socket.once('close', () => resolve(got));
  });
}

/** The share the form made: its page opens after a create. */
async function madeShare(page: Page) {
  const root = page.locator('[data-share-page]');
  await root.waitFor();
  const zId = (await root.getAttribute('data-share-page'))!;
  return (await hub.call('GET', `${hub.h}/shares/${zId}`)).json;
}

test.serial(
  'a TCP share from the form: no login or inspection offered, its address and connect line, bytes through it, mutual TLS in its settings',
  async (t) => {
    const page = await signedIn(hub.token);
    await page.getByRole('button', { name: 'New share' }).click();
    const form = page.getByRole('form', { name: 'New share' });
    await form.waitFor();
    t.is(await form.getByLabel('Target URL').inputValue(), 'http://localhost:3000');
    await form.getByLabel('It carries').selectOption('tcp');
    // the example target follows the kind; login and inspection are not offered for TCP
    t.is(await form.getByLabel('Target URL').inputValue(), 'tcp://localhost:22');
    t.is(await form.getByRole('radio', { name: /Login/ }).count(), 0);
    t.is(await form.getByRole('checkbox', { name: /Inspect requests/ }).count(), 0);
    await form.getByLabel('Share name').fill('echo');
    await form.getByLabel('Target URL').fill(`tcp://127.0.0.1:${(echo.address() as net.AddressInfo).port}`);
    await shot(page, 'new-tcp-share');
    await form.getByRole('button', { name: 'Create share' }).click();
    const share = await madeShare(page);
    t.like(share, { name: 'echo', protocol: 'tcp', mutualTls: false, inspect: false });
    t.regex(share.frontendEndpoint, /^tcp:\/\/[a-z0-9]+\.share\.localhost:\d+$/);
    const { port } = new URL(share.frontendEndpoint);

    // the page: the tcp:// address as text, the line to connect with, why there are no requests
    const head = page.locator('header.share-head');
    t.regex(await head.innerText(), /TCP/);
    t.is(await head.locator('code').first().innerText(), share.frontendEndpoint);
    const line = await head.locator('[data-connect]').innerText();
    t.is(line, `nc localhost ${port}`, 'a .localhost name is dialed as localhost');
    await page.getByText('A TCP share carries streams of bytes, not requests').waitFor();
    await shot(page, 'tcp-share-page');

    // the line's host and port carry bytes to the target and back
    const [, host, dialPort] = /^nc (\S+) (\d+)$/.exec(line)!;
    await waitFor(async () => (await through(host, Number(dialPort), 'ping over tcp')) === 'ping over tcp', { what: 'the echo through the TCP share' });

    // settings: mutual TLS on; login is not offered there either
    const settings = page.getByRole('form', { name: 'Share settings' });
    t.is(await settings.getByRole('radio', { name: /Login/ }).count(), 0);
    await settings.getByRole('radio', { name: /Mutual TLS/ }).check();
    await settings.getByRole('button', { name: 'Save settings' }).click();
    await settings.getByRole('status').waitFor();
    t.true((await hub.call('GET', `${hub.h}/shares/${share.zId}`)).json.mutualTls, 'saved through the API');
    await waitFor(
      async () =>
        /^openssl s_client -connect localhost:\d+ -servername \S+ -cert NAME\.crt -key NAME\.key$/.test(await head.locator('[data-connect]').innerText()),
      {
        what: 'the connect line for TLS',
      },
    );
    // the port now speaks TLS and wants a certificate: plain bytes get nothing back
    await waitFor(async () => (await through('localhost', Number(port), 'plain')) === '', { what: 'plain bytes refused once mutual TLS is on' });
    await shot(page, 'tcp-share-mtls');

    // the list says what it carries and shows the address as text, not as a link
    await page.goto(`${stack.baseUrl}/console#/shares`);
    const row = page.locator(`tr[data-share="${share.zId}"]`);
    await row.waitFor();
    t.regex(await row.innerText(), /TCP/);
    t.is(await row.locator(`a[href="${share.frontendEndpoint}"]`).count(), 0);
    t.deepEqual(page.problems, []);
  },
);

test.serial('an HTTP/2 share from the form: targetProtocol h2, no inspection offered, the page says why nothing is recorded', async (t) => {
  const page = await signedIn(hub.token);
  await page.getByRole('button', { name: 'New share' }).click();
  const form = page.getByRole('form', { name: 'New share' });
  await form.waitFor();
  await form.getByLabel('It carries').selectOption('h2');
  t.is(await form.getByLabel('Target URL').inputValue(), 'http://localhost:50051');
  t.is(await form.getByRole('checkbox', { name: /Inspect requests/ }).count(), 0);
  t.is(await form.getByRole('radio', { name: /Login/ }).count(), 1, 'login applies to HTTP/2 shares');
  await form.getByLabel('Share name').fill('grpc');
  await form.getByRole('button', { name: 'Create share' }).click();
  const share = await madeShare(page);
  t.like(share, { name: 'grpc', protocol: 'http', targetProtocol: 'h2', inspect: false });
  t.regex(share.backendProxyEndpoint, /^http:\/\/localhost:50051\/?$/);
  await page.getByText('a share that speaks HTTP/2 to its target (gRPC) is not recorded').waitFor();
  t.regex(await page.locator('header.share-head').innerText(), /HTTP\/2 to the target/);
  // an HTTP address is still a link
  t.is(await page.locator(`header.share-head a[href="${share.frontendEndpoint}"]`).count(), 1);
  await shot(page, 'h2-share-page');
  t.deepEqual(page.problems, []);
});
