/**
 * gRPC end to end: a real @grpc/grpc-js client speaks HTTP/2 (TLS, ALPN h2) to the edge, which speaks HTTP/2 (prior
 * knowledge) to a real @grpc/grpc-js server behind a share with `targetProtocol: "h2"`: unary, server streaming of
 * 10,000 messages, client streaming, bidi ping-pong, a deadline exceeded and a client's cancellation reaching the
 * server, an error status with its message, trailers intact. The same through an agent in a network namespace.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import test from 'ava';
import { enrollAgent, newEnvironment, runAgent, type RunningAgent } from '../helpers/agents.js';
import { edgeRequest, publicFrontendCertificate, routedShare, startTestEdge } from '../helpers/edge.js';
import { EchoClient, startGrpcServer, type ServerSeen } from '../helpers/grpc.js';
import { privateNetwork, type PrivateNetwork } from '../helpers/netns.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';
import type { Edge } from '../../edge/server.js';
import { scriptArgs } from '../helpers/script.js';
import { assertRefused } from '../helpers/refusals.js';

const stack = useStack(test, { env: { HUB_EDGE_FLUSH_MS: '600000', HUB_EDGE_UPSTREAM_TIMEOUT_MS: '5000' } });
const seen: ServerSeen = { cancelled: [], metadata: [] };
let edge: Edge;
let hub: HubFixture;
let target: Awaited<ReturnType<typeof startGrpcServer>>;
let ca: Buffer;
const cleanups: (() => Promise<unknown>)[] = [];
const namespaces: PrivateNetwork[] = [];
stack.onStop(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  target?.server.forceShutdown();
  await edge?.stop(1000);
  // removed once the edge has stopped, so that its connections into them could end
  for (const n of namespaces) await n.remove().catch(() => undefined);
});

test.before(async () => {
  edge = await startTestEdge({ host: '0.0.0.0' });
  hub = await stack.hub({ name: 'grpc' });
  target = await startGrpcServer(seen);
  await publicFrontendCertificate(stack.databaseUrl);
  ca = Buffer.from((await stack.call('GET', '/hub/v2/public/frontend-ca.pem', { contract: false })).text);
});

/** A gRPC client of the share at `host`, through the edge's TLS listener. */
function client(host: string) {
  const c = new EchoClient(`127.0.0.1:${edge.httpsPort}`, grpc.credentials.createSsl(ca), {
    'grpc.ssl_target_name_override': host,
    'grpc.default_authority': host,
  });
  cleanups.push(async () => c.close());
  return c as grpc.Client & Record<string, (...args: any[]) => any>;
}

const unary = (c: ReturnType<typeof client>, name: string, body: string, options: grpc.CallOptions = {}) =>
  new Promise<{ err: grpc.ServiceError | null; value?: Buffer; trailers?: grpc.Metadata }>((resolve) => {
    let trailers: grpc.Metadata | undefined;
    const call = c[name](Buffer.from(body), new grpc.Metadata(), options, (err: grpc.ServiceError | null, value?: Buffer) =>
      setImmediate(() => resolve({ err, value, trailers })),
    );
    call.on('status', (s: grpc.StatusObject) => (trailers = s.metadata));
  });

test.serial('targetProtocol is "http1" unless asked, "h2" when asked, returned on every share; another value is a 400 naming the field', async (t) => {
  const frontendIds = [(await hub.call('GET', `${hub.h}/frontends`)).json.find((f: { publicName: string }) => f.publicName === 'public').id];
  const plain = await hub.call('POST', `${hub.h}/shares`, { body: { name: 'plain', frontendIds, target: 'http://127.0.0.1:9' } });
  t.is(plain.status, 201);
  t.is(plain.json.targetProtocol, 'http1');
  const h2 = await hub.call('POST', `${hub.h}/shares`, { body: { name: 'h2', frontendIds, target: 'http://127.0.0.1:9', targetProtocol: 'h2' } });
  t.is(h2.status, 201);
  t.is(h2.json.targetProtocol, 'h2');
  t.is((await hub.call('GET', `${hub.h}/shares/${h2.json.zId}`)).json.targetProtocol, 'h2');
  t.true((await hub.call('GET', `${hub.h}/shares`)).json.content.every((s: { targetProtocol: string }) => ['http1', 'h2'].includes(s.targetProtocol)));
  const bad = await hub.call('POST', `${hub.h}/shares`, { body: { name: 'bad', frontendIds, target: 'http://127.0.0.1:9', targetProtocol: 'h3' } });
  assertRefused(t, bad, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.targetProtocol');
});

async function allCalls(t: import('ava').ExecutionContext, host: string) {
  const c = client(host);
  // unary, with a trailer of the server's own
  const one = await unary(c, 'unary', 'hello');
  t.is(one.err, null);
  t.is(one.value?.toString(), 'echo:hello');
  t.deepEqual(one.trailers?.get('x-trailer'), ['kept'], 'trailers intact');

  // server streaming: 10,000 messages, in order
  const received: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const call = c.count(Buffer.from('10000'));
    call.on('data', (b: Buffer) => received.push(b.toString()));
    call.on('error', reject);
    call.on('status', (s: grpc.StatusObject) => (s.code === grpc.status.OK ? resolve() : reject(new Error(s.details))));
  });
  t.is(received.length, 10_000);
  t.true(received.every((v, i) => v === String(i)));

  // client streaming
  const sum = await new Promise<string>((resolve, reject) => {
    const call = c.sum((err: grpc.ServiceError | null, value: Buffer) => (err ? reject(err) : resolve(value.toString())));
    for (let i = 1; i <= 500; i++) call.write(Buffer.from(String(i)));
    call.end();
  });
  t.is(sum, `500:${(500 * 501) / 2}`);

  // bidi ping-pong: each answer comes before the next message is sent
  const pongs = await new Promise<string[]>((resolve, reject) => {
    const call = c.pingPong();
    const got: string[] = [];
    let i = 0;
    call.on('data', (b: Buffer) => {
      got.push(b.toString());
      if (++i < 20) call.write(Buffer.from(String(i)));
      else call.end();
    });
    call.on('error', reject);
    call.on('end', () => resolve(got));
    call.write(Buffer.from('0'));
  });
  t.deepEqual(
    pongs,
    Array.from({ length: 20 }, (_, i) => `pong:${i}`),
  );

  // an error status with its message
  const failed = await unary(c, 'fail', 'x');
  t.is(failed.err?.code, grpc.status.INVALID_ARGUMENT);
  t.is(failed.err?.details, 'the request was refused: bad thing');

  // a deadline exceeded: the client gives up, and the server hears of it (its call is cancelled)
  const cancelledBefore = seen.cancelled.filter((n) => n === 'slow').length;
  const late = await unary(c, 'slow', '3000', { deadline: Date.now() + 300 });
  t.is(late.err?.code, grpc.status.DEADLINE_EXCEEDED);
  await waitFor(async () => seen.cancelled.filter((n) => n === 'slow').length > cancelledBefore, { timeoutMs: 2500, what: 'the server seeing the deadline' });

  // a client's cancellation reaches the server as a reset stream
  const endlessBefore = seen.cancelled.filter((n) => n === 'endless').length;
  await new Promise<void>((resolve) => {
    const call = c.endless(Buffer.from(''));
    let n = 0;
    call.on('data', () => ++n === 5 && call.cancel());
    call.on('error', () => resolve());
  });
  await waitFor(async () => seen.cancelled.filter((n) => n === 'endless').length > endlessBefore, {
    timeoutMs: 2500,
    what: 'the server seeing the cancellation',
  });
}

test.serial(
  'gRPC through the edge: unary with trailers, 10,000 streamed messages, client streaming, bidi ping-pong, an error status, a deadline and a cancellation reaching the server',
  async (t) => {
    const { host } = await routedShare(edge, hub, { name: 'grpc', target: `http://127.0.0.1:${target.port}`, targetProtocol: 'h2' });
    await allCalls(t, host);
    // the target saw the edge's forwarding fields, not the client's own
    const last = seen.metadata.at(-1)!;
    t.is(last['x-forwarded-proto'], 'https');
    t.is(last['x-forwarded-host'], host);
  },
);

test.serial('an http1 share in front of a gRPC server fails the call cleanly (no HTTP/2 towards the target), never hangs', async (t) => {
  const { host } = await routedShare(edge, hub, { name: 'grpc-h1', target: `http://127.0.0.1:${target.port}` });
  const r = await unary(client(host), 'unary', 'x', { deadline: Date.now() + 5000 });
  t.truthy(r.err);
  t.not(r.err?.code, grpc.status.DEADLINE_EXCEEDED);
});

test.serial('gRPC through an agent in a network namespace: the edge cannot reach the server, the agent carries every call', async (t) => {
  const ns: PrivateNetwork = await privateNetwork();
  namespaces.push(ns);
  const server = ns.spawn(process.execPath, scriptArgs('test/helpers/grpc.ts', '50051'));
  await new Promise<void>((resolve, reject) => {
    server.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    server.once('exit', (code) => reject(new Error(`the gRPC server exited ${code}`)));
  });
  const envZId = await newEnvironment(hub);
  const work = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'grpc-agent-'));
  const { dir } = await enrollAgent(hub, envZId, work);
  const agent: RunningAgent = runAgent(ns, dir, [edge.httpsPort!]);
  cleanups.push(() => agent.stop('SIGKILL'));
  await agent.printed(/connected/);
  const { host } = await routedShare(edge, hub, { name: 'grpc-agent', target: 'http://127.0.0.1:50051', targetProtocol: 'h2', envZId });
  await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length > 0, { what: 'the agent connected' });
  const c = client(host);
  const one = await unary(c, 'unary', 'through the agent');
  t.is(one.err, null, one.err?.details);
  t.is(one.value?.toString(), 'echo:through the agent');
  const received: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const call = c.count(Buffer.from('10000'));
    call.on('data', (b: Buffer) => received.push(b.toString()));
    call.on('status', (s: grpc.StatusObject) => (s.code === grpc.status.OK ? resolve() : reject(new Error(s.details))));
  });
  t.is(received.length, 10_000);
  const pong = await new Promise<string>((resolve, reject) => {
    const call = c.pingPong();
    call.on('data', (b: Buffer) => (resolve(b.toString()), call.end()));
    call.on('error', reject);
    call.write(Buffer.from('ns'));
  });
  t.is(pong, 'pong:ns');
  const failed = await unary(c, 'fail', 'x');
  t.is(failed.err?.code, grpc.status.INVALID_ARGUMENT);
  t.is(failed.err?.details, 'the request was refused: bad thing');
  const late = await unary(c, 'slow', '3000', { deadline: Date.now() + 300 });
  t.is(late.err?.code, grpc.status.DEADLINE_EXCEEDED);
});

test.serial("an h2 target's cookies stay on the share's own host: a Domain naming the parent domain or another host is removed", async (t) => {
  const http2 = await import('node:http2');
  const server = http2.createServer((_req, res) => {
    res.setHeader('set-cookie', ['a=1; Domain=share.localhost; Path=/', 'b=2; Path=/; domain=.other.example', 'c=3; Path=/']);
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // the edge keeps its HTTP/2 session to a target open for reuse: close waits for sessions, so end them
  const sessions = new Set<import('node:http2').ServerHttp2Session>();
  server.on('session', (session) => sessions.add(session));
  cleanups.push(
    () =>
      new Promise((resolve) => {
        server.close(resolve);
        for (const session of sessions) session.destroy();
      }),
  );
  const { host } = await routedShare(edge, hub, {
    name: 'cookies',
    target: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    targetProtocol: 'h2',
  });
  const r = await edgeRequest(edge.httpPort!, host);
  t.is(r.status, 200, r.text);
  const cookies = [r.headers['set-cookie'] ?? []].flat();
  t.deepEqual(cookies, ['a=1; Path=/', 'b=2; Path=/', 'c=3; Path=/']);
});
