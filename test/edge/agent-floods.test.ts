/**
 * Frame floods from an agent that is serving traffic: a hostile agent holds one stream of its share open (a slow
 * answer in progress to a real request through the edge) and floods beside it; the edge closes its session, logs
 * what it sent, refuses its reconnection for a while, and another hub's share measured beside the flood keeps its
 * p99 under twice the reference (the larger of the p99 just before and just after; test/helpers/latency.ts floors
 * it). Honest traffic through a real agent (`edgehub agent run`) never trips the limits: a 64 MiB download at full
 * speed, a 32 MiB upload, and hundreds of small requests, on new streams and on kept-alive ones.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import type { Edge } from '../../edge/server.js';
import { CHECK_MS, OVERHEAD_PER_SECOND } from '../../edge/agents/floods.js';
import { enrollAgent, newEnvironment } from '../helpers/agents.js';
import { publicFrontendCertificate, readBody, routedShare, startBackend, startTestEdge } from '../helpers/edge.js';
import { dialAsAgent, floodOn, latencies, p99, type Flood } from '../helpers/floodAgent.js';
import { LATENCY_FLOOR_MS, underTwice } from '../helpers/latency.js';
import { logDir } from '../helpers/logScan.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

const stack = useStack(test, { env: { HUB_EDGE_FLUSH_MS: '600000' } });
stack.onStop(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await edge?.stop(1000);
});
const cleanups: (() => Promise<unknown>)[] = [];
const work = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'floods-'));
let edge: Edge;
let attacker: HubFixture;
let attackerEnv: string;
let attackerHost: string;
let otherHost: string;
let honest: HubFixture;
let honestEnv: string;
let honestHost: string;
let honestAgent: { dir: string; id: string };

const BIG = 64 << 20;
const UPLOAD = 32 << 20;

test.before(async () => {
  edge = await startTestEdge();
  await publicFrontendCertificate(stack.databaseUrl);
  // the attacker's environment is served by agents (its reach is set by its first enrollment)
  attacker = await stack.hub();
  attackerEnv = await newEnvironment(attacker);
  await enrollAgent(attacker, attackerEnv, work);
  attackerHost = (await routedShare(edge, attacker, { target: 'http://127.0.0.1:9', envZId: attackerEnv })).host;
  // another tenant, served directly
  const other = await stack.hub();
  const backend = await startBackend((_req, res) => res.end('other'));
  cleanups.push(() => backend.close());
  otherHost = (await routedShare(edge, other, { target: backend.url })).host;
  // an honest tenant whose target is reached through a real agent
  honest = await stack.hub();
  honestEnv = await newEnvironment(honest);
  honestAgent = await enrollAgent(honest, honestEnv, work);
  const target = await startBackend((req, res) => {
    if (req.url === '/big') {
      res.writeHead(200, { 'content-length': String(BIG) });
      const chunk = Buffer.alloc(64 << 10, 7);
      let left = BIG / chunk.length;
      const more = () => {
        while (left > 0) {
          left--;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      return more();
    }
    if (req.url === '/upload') return void readBody(req).then((body) => res.end(String(body.length)));
    res.writeHead(200, req.url?.startsWith('/close') ? { connection: 'close' } : {});
    res.end(`small ${req.url}`);
  });
  cleanups.push(() => target.close());
  honestHost = (await routedShare(edge, honest, { target: target.url, envZId: honestEnv })).host;
});

/** This process's log lines (the in-process edge's among them) whose message matches `pattern`. */
function logged(pattern: RegExp): { msg: string; agentId?: string; peakOverhead?: number }[] {
  const dir = logDir();
  if (!dir) throw new Error('run with `npm test`: it gives the processes a log folder (HUB_LOG_DIR)');
  return readdirSync(dir)
    .filter((f) => f.endsWith(`-${process.pid}.log`))
    .flatMap((f) => readFileSync(path.join(dir, f), 'utf8').split('\n'))
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))
    .filter((l) => pattern.test(l.msg));
}

/** A request to the attacker's share whose answer is in progress: resolves once its status and first bytes came. */
function slowAnswer(): Promise<{ status: number; ended: Promise<void> }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: edge.httpPort, path: '/slow', headers: { host: attackerHost }, agent: false }, (res) => {
        const ended = new Promise<void>((done) => {
          res.once('close', () => done());
          res.once('error', () => done());
        });
        res.once('data', () => resolve({ status: res.statusCode ?? 0, ended }));
        res.once('end', () => reject(new Error('the slow answer ended')));
      })
      .once('error', reject);
  });
}

/**
 * The reason each flood is closed for. PRIORITY and unknown frames change nothing in nghttp2, whose newer versions
 * (1.69, in Node 22) end a session that sends too many of them by themselves, before the edge's overhead budget does
 * (1.61, in Node 20, reads them silently): either reason closes the session.
 */
const REFUSED_BY_NGHTTP2 = /frames nghttp2 refused \(Protocol error: /;
const EXPECTED: Record<string, RegExp> = {
  WINDOW_UPDATE: /that its streams' data does not explain/,
  PRIORITY: new RegExp(`that its streams' data does not explain|${REFUSED_BY_NGHTTP2.source}`),
  RST_STREAM: /that its streams' data does not explain/,
  EMPTY_DATA: /that its streams' data does not explain/,
  UNKNOWN: new RegExp(`that its streams' data does not explain|${REFUSED_BY_NGHTTP2.source}`),
  EMPTY_DATA_OPEN: /over 100 invalid frames/,
  CONTINUATION: /an endless header block/,
  PING: /a PING flood/,
  SETTINGS: /a SETTINGS flood/,
};

for (const kind of Object.keys(EXPECTED) as Flood[]) {
  test.serial(`a ${kind} flood beside a slow answer in progress closes the agent's session; another hub's p99 rises less than 2x`, async (t) => {
    // one measurement's p99 can move 2x by itself on a shared machine: up to three full measurements (before,
    // during a new flood, after), and one must show less than 2x; a flood that costs fails all three
    const ratios: string[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      const { dir, id } = await enrollAgent(attacker, attackerEnv, work);
      const dial = await dialAsAgent(dir, edge.httpsPort!, { serve: true });
      t.true(dial.up, 'the flooding agent took its targets');
      await waitFor(async () => edge.agents.connected(attacker.hubId, attackerEnv).includes(id), { what: 'the flooding agent connected' });
      const answer = await slowAnswer();
      t.is(answer.status, 200);
      t.true(dial.held > 0, 'a stream of the share is open while the agent floods');
      await latencies(edge.httpPort!, otherHost, 50); // warm
      const before = await latencies(edge.httpPort!, otherHost, 300);
      const flooding = floodOn(dial, kind, 4000);
      const during = await latencies(edge.httpPort!, otherHost, 300);
      const result = await flooding;
      const after = await latencies(edge.httpPort!, otherHost, 300);
      await answer.ended; // the slow answer went with the session
      const reference = Math.max(p99(before), p99(after));
      t.log(
        `${kind} #${attempt}: ${(result.sent / 1e6).toFixed(1)} MB sent; p99 before ${p99(before).toFixed(2)} ms, during ${p99(during).toFixed(2)} ms, after ${p99(after).toFixed(2)} ms`,
      );
      t.true(result.closedByEdge, 'the edge closed the flooding session');
      const lines = logged(/^edge: agent connection closed: it sent /).filter((l) => l.agentId === id);
      t.is(lines.length, 1, 'one log line names the flood');
      t.regex(lines[0]?.msg ?? '', EXPECTED[kind]);
      // the same agent reconnecting at once is refused for a while, so a flood cannot simply start again
      t.false((await dialAsAgent(dir, edge.httpsPort!)).up);
      ratios.push((p99(during) / reference).toFixed(2));
      if (underTwice(p99(during), reference)) return;
    }
    t.fail(`p99 during / reference: ${ratios.join(', ')} (each at least 2, the reference taken at least at ${LATENCY_FLOOR_MS} ms)`);
  });
}

test.serial(
  'a frame HTTP/2 forbids (CONTINUATION without HEADERS) makes the edge stop reading; the session ends as a flood or at its next unanswered ping',
  async (t) => {
    const { dir, id } = await enrollAgent(attacker, attackerEnv, work);
    const dial = await dialAsAgent(dir, edge.httpsPort!, { serve: true });
    await waitFor(async () => edge.agents.connected(attacker.hubId, attackerEnv).includes(id), { what: 'the agent connected' });
    const answer = await slowAnswer();
    t.true(dial.held > 0);
    // nghttp2 answers the first one with GOAWAY and reads nothing more: the flood stalls on the socket's buffers
    const result = await floodOn(dial, 'CONTINUATION_ALONE', 20_000);
    await answer.ended;
    t.log(`${(result.sent / 1e6).toFixed(1)} MB written before the edge closed the connection`);
    t.true(result.closedByEdge, 'the edge closed the session');
    t.true(result.sent < 16e6, 'the edge stopped reading');
    // what nghttp2 read before it stopped may already be over the overhead budget (a flood); else the ping ends it;
    // newer nghttp2 (Node 22) reports the forbidden frame as a protocol error, which ends the session at once
    const closing = logged(
      /^edge: agent (did not answer a ping; connection closed$|connection closed: it sent (\d+ bytes of frames|frames nghttp2 refused \(Protocol error: ))/,
    ).filter((l) => l.agentId === id);
    t.is(closing.length, 1, 'one log line says why the session ended');
    t.log(closing[0]?.msg);
  },
);

test.serial('honest traffic through a real agent never trips the limits: a 64 MiB download, a 32 MiB upload, hundreds of small requests', async (t) => {
  const { dir, id } = honestAgent;
  const child = spawn(process.execPath, ['agent/bin/edgehub.js', 'agent', 'run', '--dir', dir, '--edge', `127.0.0.1:${edge.httpsPort}`], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let printed = '';
  child.stdout.on('data', (d) => (printed += d));
  child.stderr.on('data', (d) => (printed += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  cleanups.push(async () => {
    child.kill();
    await exited;
  });
  await waitFor(async () => edge.agents.connected(honest.hubId, honestEnv).includes(id), { what: `the honest agent connected (printed: ${printed})` });

  // one big download, read as fast as it comes
  const downloaded = await new Promise<number>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: edge.httpPort, path: '/big', headers: { host: honestHost }, agent: false }, (res) => {
        let n = 0;
        res.on('data', (c: Buffer) => (n += c.length));
        res.once('end', () => resolve(n));
        res.once('error', reject);
      })
      .once('error', reject);
  });
  t.is(downloaded, BIG);

  // one big upload: the agent acknowledges it with window updates
  const uploaded = await new Promise<string>((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: edge.httpPort,
        method: 'POST',
        path: '/upload',
        headers: { host: honestHost, 'content-length': String(UPLOAD) },
        agent: false,
      },
      (res) => {
        readBody(res).then((b) => resolve(b.toString()), reject);
      },
    );
    req.once('error', reject);
    req.end(Buffer.alloc(UPLOAD, 3));
  });
  t.is(uploaded, String(UPLOAD));

  // hundreds of small requests, 16 at a time: kept-alive connections to the target, then a new stream for each
  const small = async (prefix: string, n: number) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    const bodies: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < n) {
          const i = next++;
          bodies[i] = await new Promise<string>((resolve, reject) => {
            http
              .get({ host: '127.0.0.1', port: edge.httpPort, path: `/${prefix}${i}`, headers: { host: honestHost }, agent }, (res) =>
                readBody(res).then((b) => resolve(`${res.statusCode} ${b}`), reject),
              )
              .once('error', reject);
          });
        }
      }),
    );
    agent.destroy();
    return bodies;
  };
  const kept = await small('kept', 400);
  t.deepEqual(
    kept,
    Array.from({ length: 400 }, (_, i) => `200 small /kept${i}`),
  );
  const closed = await small('close', 300);
  t.deepEqual(
    closed,
    Array.from({ length: 300 }, (_, i) => `200 small /close${i}`),
  );

  t.deepEqual(edge.agents.connected(honest.hubId, honestEnv), [id], 'the same connection carried it all');
  t.deepEqual(
    logged(/^edge: agent connection (closed|refused)/).filter((l) => l.agentId === id),
    [],
    'never closed or refused',
  );
  child.kill();
  await exited;
  const gone = await waitFor(async () => logged(/^edge: agent disconnected$/).find((l) => l.agentId === id), { what: 'the honest agent disconnected' });
  const budget = (OVERHEAD_PER_SECOND * CHECK_MS) / 1000;
  // even before the allowances per stream and per byte written, its control traffic stays under the budget
  t.log(`the honest agent's most bytes beyond DATA in one ${CHECK_MS} ms check: ${gone.peakOverhead} (the budget: ${budget})`);
  t.true((gone.peakOverhead ?? Number.POSITIVE_INFINITY) < budget);
});
