/**
 * TCP shares: a port of HUB_EDGE_TCP_PORTS per share (a tiny range here), bytes carried to an echo server directly
 * and through an agent in a network namespace (64 MiB each way, byte-exact), half-close both ways, mutual TLS
 * (with or without SNI) refusing a missing or another hub's certificate, metering, a deleted share's port refusing
 * at once with its connections closed, the port used again, and the exhausted range answered 409 naming the variable.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import test from 'ava';
import { enrollAgent, newEnvironment, runAgent, startPrivateTarget } from '../helpers/agents.js';
import { freeRange, publicFrontendCertificate, publicFrontendId, startTestEdge } from '../helpers/edge.js';
import { privateNetwork, type PrivateNetwork } from '../helpers/netns.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';
import { keyAndCsr } from '../helpers/tlsClient.js';
import type { Edge } from '../../edge/server.js';
import type { UsageRow } from '../../shared/metrics/store.js';

const base = await freeRange(3);
const stack = useStack(test, { env: { HUB_EDGE_TCP_PORTS: `${base}-${base + 2}`, HUB_EDGE_FLUSH_MS: '600000', HUB_EDGE_UPSTREAM_TIMEOUT_MS: '5000' } });
const stored: UsageRow[] = [];
let edge: Edge;
let hub: HubFixture;
let other: HubFixture;
const cleanups: (() => Promise<unknown>)[] = [];
const namespaces: PrivateNetwork[] = [];
stack.onStop(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await edge?.stop(1000);
  // removed once the edge has stopped, so that its connections into them could end
  for (const n of namespaces) await n.remove().catch(() => undefined);
});

/** A target: `echo` sends everything back; `summary` reads to the end, then answers with a count and hash. */
async function target(kind: 'echo' | 'summary' | 'first'): Promise<{ port: number; got: number[] }> {
  const got: number[] = [];
  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    socket.on('error', () => undefined);
    if (kind === 'echo') return void socket.pipe(socket);
    if (kind === 'first') {
      // speaks first and ends its sending at once, still reading what the client sends after
      socket.end('hello, then silence');
      let n = 0;
      socket.on('data', (d: Buffer) => (n += d.length));
      socket.on('end', () => got.push(n));
      return;
    }
    const hash = createHash('sha256');
    let n = 0;
    socket.on('data', (d: Buffer) => (hash.update(d), (n += d.length)));
    socket.on('end', () => socket.end(`got ${n} ${hash.digest('hex')}`));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((r) => server.close(r)));
  return { port: (server.address() as net.AddressInfo).port, got };
}

test.before(async () => {
  edge = await startTestEdge({ host: '0.0.0.0', store: async (rows) => void stored.push(...rows) });
  hub = await stack.hub({ name: 'tcp-a' });
  other = await stack.hub({ name: 'tcp-b' });
  await publicFrontendCertificate(stack.databaseUrl);
});

/** Shares a test made, deleted after it whatever happened (the range has three ports: one left over fails the next). */
const made: { h: HubFixture; zId: string }[] = [];
test.afterEach.always(async () => {
  for (const { h, zId } of made.splice(0)) await h.call('DELETE', `${h.h}/shares/${zId}`).catch(() => undefined);
});

async function tcpShare(h: HubFixture, body: Record<string, unknown>): Promise<{ zId: string; port: number; host: string }> {
  const created = await h.call('POST', `${h.h}/shares`, { body: { name: 'tcp', frontendIds: [await publicFrontendId(h)], protocol: 'tcp', ...body } });
  if (created.status !== 201) throw new Error(`${created.status} ${created.text}`);
  made.push({ h, zId: created.json.zId });
  const endpoint = new URL(created.json.frontendEndpoint);
  const port = Number(endpoint.port);
  await waitFor(async () => (await h.call('GET', `${h.h}/shares/${created.json.zId}`)).json.status === 'ACTIVE', { what: 'ACTIVE' });
  await waitFor(async () => edge.tcp.ports.includes(port), { timeoutMs: 2000, what: `the edge listening on ${port}` });
  return { zId: created.json.zId, port, host: endpoint.hostname };
}

/** Sends `bytes` on a connection (plain or TLS) and ends; resolves with everything received until the end. */
function exchange(socket: net.Socket, bytes: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('end', () => resolve(Buffer.concat(chunks)));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks)));
    socket.end(bytes);
  });
}

const pattern = (n: number) => {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i += 4) b.writeUInt32LE(i, i);
  return b;
};
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const plain = (port: number) => net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });

test.serial('create: protocol tcp, a tcp://HOST:PORT target and endpoint on a port of the range; mismatches are 400s naming the field', async (t) => {
  const frontendIds = [await publicFrontendId(hub)];
  const bad = async (body: Record<string, unknown>, field: RegExp) => {
    const r = await hub.call('POST', `${hub.h}/shares`, { body: { name: 'bad', frontendIds, ...body } });
    t.is(r.status, 400, r.text);
    t.regex(r.json.message, field);
  };
  await bad({ target: 'tcp://127.0.0.1:22' }, /protocol/);
  await bad({ protocol: 'tcp', target: 'http://127.0.0.1:22' }, /tcp:\/\/HOST:PORT/);
  await bad({ protocol: 'tcp', target: 'tcp://127.0.0.1' }, /tcp:\/\/HOST:PORT/);
  await bad({ protocol: 'tcp', target: 'tcp://127.0.0.1:22', targetProtocol: 'h2' }, /targetProtocol/);
  await bad({ protocol: 'udp', target: 'tcp://127.0.0.1:22' }, /protocol/);
  t.is((await hub.call('GET', `${hub.h}/shares`)).json.content.length, 0, 'nothing written');
});

test.serial('an echo server directly: 64 MiB each way byte-exact, metered; half-close both ways', async (t) => {
  const echo = await target('echo');
  const share = await tcpShare(hub, { target: `tcp://127.0.0.1:${echo.port}` });
  t.true(share.port >= base && share.port <= base + 2);
  t.regex(share.host, /\.share\.localhost$/);
  const data = pattern(64 << 20);
  const back = await exchange(plain(share.port), data);
  t.is(back.length, data.length);
  t.is(sha(back), sha(data));
  await edge.meter.flush();
  const metered = stored.filter((r) => r.shareId === share.zId).reduce((s, r) => ({ rx: s.rx + r.rx, tx: s.tx + r.tx }), { rx: 0, tx: 0 });
  t.deepEqual(metered, { rx: data.length, tx: data.length });
  await hub.call('DELETE', `${hub.h}/shares/${share.zId}`);

  // the client ends its sending; the target reads to the end and still answers
  const summary = await target('summary');
  const s2 = await tcpShare(hub, { target: `tcp://127.0.0.1:${summary.port}` });
  const sent = pattern(1 << 20);
  t.is((await exchange(plain(s2.port), sent)).toString(), `got ${sent.length} ${sha(sent)}`);
  await hub.call('DELETE', `${hub.h}/shares/${s2.zId}`);

  // the target ends its sending first; the client still sends, and the target reads it
  const first = await target('first');
  const s3 = await tcpShare(hub, { target: `tcp://127.0.0.1:${first.port}` });
  const client = plain(s3.port);
  const greeting = await new Promise<string>((resolve) => {
    let text = '';
    client.on('data', (d) => (text += d));
    client.once('end', () => resolve(text));
  });
  t.is(greeting, 'hello, then silence');
  client.end(Buffer.alloc(1000, 1));
  await waitFor(async () => first.got.length > 0, { what: 'the target reading the rest' });
  t.deepEqual(first.got, [1000]);
  await hub.call('DELETE', `${hub.h}/shares/${s3.zId}`);
});

test.serial("mutual TLS: the hub's client certificate is carried; none or another hub's is refused before the target", async (t) => {
  const summary = await target('summary');
  const share = await tcpShare(hub, { target: `tcp://127.0.0.1:${summary.port}`, mutualTls: true });
  const certificate = async (h: HubFixture, name: string) => {
    const { keyPem, csrPem } = await keyAndCsr(`/CN=${name}`);
    const created = await h.call('POST', `${h.h}/client-certificates`, { body: { name, value: csrPem } });
    return { cert: (await h.call('GET', `${h.h}/client-certificates/${created.json.id}`)).json.value as string, key: keyPem };
  };
  const mine = await certificate(hub, 'tcp-laptop');
  const foreign = await certificate(other, 'tcp-intruder');
  const connect = (c?: { cert: string; key: string }) =>
    tls.connect({ host: '127.0.0.1', port: share.port, servername: share.host, rejectUnauthorized: false, ...c } as tls.ConnectionOptions);
  const ok = await waitFor(
    async () => {
      const r = await exchange(connect(mine), Buffer.from('secret'));
      return r.length > 0 && r.toString();
    },
    { what: 'the certificate admitted' },
  );
  t.is(ok, `got 6 ${sha(Buffer.from('secret'))}`);
  // a client that names no server (no SNI, as `openssl s_client -noservername`): the share host's certificate all the
  // same, and carried
  const unnamed = tls.connect({ host: '127.0.0.1', port: share.port, servername: '', rejectUnauthorized: false, ...mine } as tls.ConnectionOptions);
  const served = await new Promise<string | undefined>((resolve) => {
    unnamed.once('secureConnect', () => resolve(unnamed.getPeerX509Certificate()?.checkHost(share.host)));
    unnamed.once('error', () => resolve(undefined));
  });
  // the name the certificate matches the share's host by (a wildcard of its domain)
  t.truthy(served, "no SNI: the share host's certificate");
  t.is((await exchange(unnamed, Buffer.from('no name'))).toString(), `got 7 ${sha(Buffer.from('no name'))}`);
  t.is((await exchange(connect(), Buffer.from('anonymous'))).length, 0, 'no certificate: closed');
  t.is((await exchange(connect(foreign), Buffer.from('intruder'))).length, 0, "another hub's certificate: closed");
  // a plain TCP client never gets past the handshake
  t.is((await exchange(plain(share.port), Buffer.from('GET / HTTP/1.0\r\n\r\n'))).length, 0);
  await hub.call('DELETE', `${hub.h}/shares/${share.zId}`);
});

test.serial(
  'PATCH of a TCP share: mutual TLS on and off keeps its tcp:// address and port (the port speaks TLS, then plain); login options are 400s naming them, nothing changed',
  async (t) => {
    const echo = await target('echo');
    const share = await tcpShare(hub, { name: 'tcp-patched', target: `tcp://127.0.0.1:${echo.port}` });
    const read = async () => (await hub.call('GET', `${hub.h}/shares/${share.zId}`)).json;
    const endpoint = (await read()).frontendEndpoint;
    t.is(endpoint, `tcp://${share.host}:${share.port}`);

    const on = await hub.call('PATCH', `${hub.h}/shares/${share.zId}`, { body: { mutualTls: true } });
    t.is(on.status, 200, on.text);
    t.like(on.json, { mutualTls: true, frontendEndpoint: endpoint });
    t.is((await read()).frontendEndpoint, endpoint);
    // the same port now speaks TLS: plain bytes get nothing back (a close or a reset)
    await waitFor(async () => (await exchange(plain(share.port), Buffer.from('plain')).catch(() => Buffer.alloc(0))).length === 0, {
      what: 'the port speaking TLS',
    });

    const off = await hub.call('PATCH', `${hub.h}/shares/${share.zId}`, { body: { mutualTls: false } });
    t.like(off.json, { mutualTls: false, frontendEndpoint: endpoint });
    await waitFor(async () => (await exchange(plain(share.port), Buffer.from('plain again')).catch(() => Buffer.alloc(0))).toString() === 'plain again', {
      what: 'the port plain again',
    });

    const provider = await hub.call('POST', `${hub.h}/auth-providers`, {
      body: { name: 'tcp-login', type: 'GITHUB', config: { clientId: 'placeholder', clientSecret: 'placeholder' } },
    });
    t.is(provider.status, 201, provider.text);
    for (const body of [
      { authProviderId: provider.json.id },
      { authProviderId: provider.json.id, oauthEmailDomains: ['example.com'] },
      { oauthAuthorizationCheckInterval: 'PT1H' },
    ]) {
      const r = await hub.call('PATCH', `${hub.h}/shares/${share.zId}`, { body: { ...body, mutualTls: true } });
      t.is(r.status, 400, r.text);
      t.is(r.json.error, 'invalid_request');
      t.regex(r.json.message, /authProviderId.*for HTTP shares: a TCP share admits by mutual TLS/);
    }
    t.like(await read(), { mutualTls: false, authProviderId: null, frontendEndpoint: endpoint }, 'nothing of a refused PATCH written');
    await hub.call('DELETE', `${hub.h}/shares/${share.zId}`);
    await hub.call('DELETE', `${hub.h}/auth-providers/${provider.json.id}`);
  },
);

test.serial(
  "a deleted share's port refuses at once and its open connections close; the port is given again; an exhausted range is 409 naming HUB_EDGE_TCP_PORTS",
  async (t) => {
    const echo = await target('echo');
    const shares: { zId: string; port: number; host: string }[] = [];
    for (let i = 0; i < 3; i++) shares.push(await tcpShare(hub, { name: `tcp-${i}`, target: `tcp://127.0.0.1:${echo.port}` }));
    t.deepEqual(shares.map((s) => s.port).sort(), [base, base + 1, base + 2]);
    const full = await hub.call('POST', `${hub.h}/shares`, {
      body: { name: 'one-more', frontendIds: [await publicFrontendId(hub)], protocol: 'tcp', target: `tcp://127.0.0.1:${echo.port}` },
    });
    t.is(full.status, 409);
    t.is(full.json.error, 'conflict');
    t.regex(full.json.message, /HUB_EDGE_TCP_PORTS/);

    const open = plain(shares[1].port);
    await new Promise<void>((resolve) => open.once('connect', () => resolve()));
    const closed = new Promise<void>((resolve) => (open.once('close', () => resolve()), open.once('end', () => resolve())));
    open.on('error', () => undefined);
    const deleted = Date.now();
    t.is((await hub.call('DELETE', `${hub.h}/shares/${shares[1].zId}`)).status, 204);
    await closed;
    t.true(Date.now() - deleted < 2000, `closed after ${Date.now() - deleted} ms`);
    const refused = await new Promise<string>((resolve) =>
      plain(shares[1].port)
        .once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? ''))
        .once('connect', () => resolve('connected')),
    );
    t.is(refused, 'ECONNREFUSED');
    const again = await tcpShare(hub, { name: 'tcp-again', target: `tcp://127.0.0.1:${echo.port}` });
    t.is(again.port, shares[1].port, 'the freed port is given again');
    t.is((await exchange(plain(again.port), Buffer.from('ping'))).toString(), 'ping');
    for (const s of [shares[0], shares[2], again]) await hub.call('DELETE', `${hub.h}/shares/${s.zId}`);
  },
);

test.serial(
  'a client that does not read: the edge stops reading the target (what waits stays bounded), then carries it all once the client reads',
  async (t) => {
    const total = 256 << 20;
    let accepted = 0;
    let finished: Promise<void> = Promise.resolve();
    // a target that sends 256 MiB as fast as its connection takes them
    const server = net.createServer((socket) => {
      socket.on('error', () => undefined);
      const chunk = Buffer.alloc(1 << 20, 1);
      finished = new Promise<void>((resolve) => {
        const more = () => {
          while (accepted < total) {
            accepted += chunk.length;
            if (!socket.write(chunk)) return void socket.once('drain', more);
          }
          socket.end(resolve);
        };
        more();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((r) => server.close(r)));
    const share = await tcpShare(hub, { name: 'tcp-slow', target: `tcp://127.0.0.1:${(server.address() as net.AddressInfo).port}` });
    const client = plain(share.port);
    client.pause();
    // the target's sending stops once every buffer on the way is full: kernel buffers and at most 256 KiB in the edge
    let last = -1;
    await waitFor(
      async () => {
        await new Promise((r) => setTimeout(r, 300));
        const settled = accepted > 0 && accepted === last;
        last = accepted;
        return settled;
      },
      { timeoutMs: 20_000, what: "the target's sending to stop" },
    );
    t.true(accepted < 64 << 20, `the target got ${accepted >> 20} MiB out while the client read nothing`);
    // once read, everything arrives
    let got = 0;
    client.on('data', (d: Buffer) => (got += d.length));
    const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
    client.resume();
    await ended;
    await finished;
    t.is(got, total);
    await hub.call('DELETE', `${hub.h}/shares/${share.zId}`);
  },
);

test.serial(
  'through an agent in a network namespace: the echo server the edge cannot reach, 64 MiB each way byte-exact; a target that closes at once loses nothing',
  async (t) => {
    const ns = await privateNetwork();
    namespaces.push(ns);
    await startPrivateTarget(ns, 'tcp');
    const envZId = await newEnvironment(hub);
    const { dir } = await enrollAgent(hub, envZId, mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'tcp-agent-')));
    const agent = runAgent(ns, dir, [edge.httpsPort!]);
    cleanups.push(() => agent.stop('SIGKILL'));
    await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length > 0, { what: 'the agent connected' });
    const share = await tcpShare(hub, { name: 'tcp-agent', target: 'tcp://127.0.0.1:9090', envZId });
    const data = pattern(64 << 20);
    const back = await exchange(plain(share.port), data);
    t.is(back.length, data.length);
    t.is(sha(back), sha(data));
    await hub.call('DELETE', `${hub.h}/shares/${share.zId}`);

    // a target that speaks first and closes at once: every byte it sent reaches the client before the client's end,
    // however soon after its data the agent's stream closes (40 connections, 10 at a time)
    const speaker = await tcpShare(hub, { name: 'tcp-speaker', target: 'tcp://127.0.0.1:9091', envZId });
    const expected = Buffer.allocUnsafe(256 * 1024);
    for (let i = 0; i < expected.length; i++) expected[i] = i % 251;
    for (let round = 0; round < 4; round++) {
      const answers = await Promise.all(Array.from({ length: 10 }, () => exchange(plain(speaker.port), Buffer.alloc(0))));
      for (const answer of answers)
        t.true(answer.equals(expected), `round ${round}: ${answer.length} of ${expected.length} bytes, exact: ${answer.equals(expected)}`);
    }
    await hub.call('DELETE', `${hub.h}/shares/${speaker.zId}`);
  },
);
