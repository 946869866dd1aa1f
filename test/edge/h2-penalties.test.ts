/**
 * An HTTP/2 penalty keeps an address from HTTP/2 only: while a client on 127.0.0.1 floods PINGs (its connections sent
 * away, the address penalised again and again), an agent on the same address connects (a new connection, admitted by
 * its certificate) and its share answers, an HTTP/1.1 client over TLS on the address is served, and new HTTP/2
 * connections from the address are refused before the TLS handshake, each held until the penalty ends, so that the
 * flooder's reconnections are few.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import test from 'ava';
import type { Edge } from '../../edge/server.js';
import { enrollAgent, newEnvironment, runAgentHere, type RunningAgent } from '../helpers/agents.js';
import { edgeRequest, publicFrontendCertificate, routedShare, startBackend, startTestEdge } from '../helpers/edge.js';
import type { AttackSummary } from '../helpers/h2attack.js';
import { scriptArgs } from '../helpers/script.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

const stack = useStack(test, { env: { HUB_EDGE_FLUSH_MS: '600000' } });
const cleanups: (() => Promise<unknown>)[] = [];
stack.onStop(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await edge?.stop(1000);
});
const work = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'penalties-'));
let edge: Edge;
let hub: HubFixture;

test.before(async () => {
  edge = await startTestEdge();
  hub = await stack.hub({ name: 'penalties' });
  await publicFrontendCertificate(stack.databaseUrl);
});

/** Whether a TLS connection offering `alpn` from 127.0.0.1 is refused before its handshake completes. */
const refused = (servername: string, alpn: string) =>
  new Promise<boolean>((resolve) => {
    const socket = tls.connect({ host: '127.0.0.1', port: edge.httpsPort!, servername, ALPNProtocols: [alpn], rejectUnauthorized: false }, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });

/** A PING flood from a process of its own (test/helpers/h2attack.ts), for `ms`; resolves with its summary. */
async function pingFlood(host: string, ms: number): Promise<{ done: Promise<AttackSummary> }> {
  const child: ChildProcess = spawn(process.execPath, scriptArgs('test/helpers/h2attack.ts', 'ping', String(edge.httpsPort), host, String(ms)), {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  cleanups.push(async () => child.kill('SIGKILL'));
  let out = '';
  const done = new Promise<AttackSummary>((resolve, reject) => {
    child.stdout!.on('data', (d) => (out += d));
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out.slice(out.indexOf('\n') + 1))) : reject(new Error(`the attacker exited ${code}`))));
  });
  await new Promise<void>((resolve) => child.stdout!.on('data', () => out.includes('ready') && resolve()));
  child.stdin!.end('go\n');
  return { done };
}

test('a PING flood from 127.0.0.1: an agent on the same address connects and its share answers; HTTP/1.1 over TLS is served; HTTP/2 from the address is refused', async (t) => {
  const envZId = await newEnvironment(hub);
  const backend = await startBackend((_req, res) => res.end('through the agent'));
  cleanups.push(() => backend.close());
  const share = await routedShare(edge, hub, { name: 'agent-share', target: backend.url, envZId });
  const { dir } = await enrollAgent(hub, envZId, work);
  const other = await routedShare(edge, hub, { name: 'flooded', target: backend.url });

  const flood = (await pingFlood(other.host, 20_000)).done;
  // the flood's connections are sent away and the address penalised: an HTTP/2 connection from it is refused
  await waitFor(() => refused(other.host, 'h2'), { timeoutMs: 10_000, what: 'HTTP/2 from 127.0.0.1 refused' });

  // an agent started now, on the same address, connects (its own ALPN protocol, its certificate) and serves
  const agent: RunningAgent = runAgentHere(dir, [edge.httpsPort!]);
  cleanups.push(() => agent.stop('SIGKILL'));
  await agent.printed(/connected to edge/, 15_000);
  const through = await waitFor(
    async () => {
      const r = await edgeRequest(edge.httpPort!, share.host, { path: '/' });
      return r.status === 200 && r;
    },
    { timeoutMs: 10_000, what: "the agent's share answering" },
  );
  t.is(through.text, 'through the agent');
  t.false(
    agent.lines.some((l) => /cannot connect/.test(l)),
    agent.lines.join(' | '),
  );

  // an HTTP/1.1 client over TLS from the same address is served
  const h1 = await new Promise<string>((resolve) => {
    const socket = tls.connect(
      { host: '127.0.0.1', port: edge.httpsPort!, servername: other.host, ALPNProtocols: ['http/1.1'], rejectUnauthorized: false },
      () => {
        socket.write(`GET / HTTP/1.1\r\nHost: ${other.host}\r\nConnection: close\r\n\r\n`);
      },
    );
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    socket.on('error', () => resolve(text));
    socket.on('close', () => resolve(text));
  });
  t.regex(h1, /^HTTP\/1\.1 200 /);

  // the flood goes on and is refused all along: its connections sent away (GOAWAY ENHANCE_YOUR_CALM) or refused
  await waitFor(() => refused(other.host, 'h2'), { timeoutMs: 10_000, what: 'HTTP/2 from the flooding address still refused' });
  const summary = await flood;
  t.log(JSON.stringify(summary));
  t.true((summary.endings.refused ?? 0) > 0, `refused before TLS: ${JSON.stringify(summary.endings)}`);
  // a refused connection is held until the penalty ends: the flooder, which reconnects 20 ms after each refusal,
  // makes a few attempts per penalty, not hundreds a second (each one an accept and a read for the edge)
  t.true((summary.endings.refused ?? 0) <= 10 * summary.connections + 10, `attempts while penalised: ${JSON.stringify(summary.endings)}`);
  t.true(summary.connections >= 1);
  // the agent stayed connected all along
  t.is((await edgeRequest(edge.httpPort!, share.host, { path: '/' })).text, 'through the agent');
});
