/**
 * HTTP/2's own attacks against one hub's share, refused before they cost another hub: each attack runs from a
 * process of its own (test/helpers/h2attack.ts), one connection after another, while another hub's share is
 * measured beside it; the edge ends each attacking connection (GOAWAY ENHANCE_YOUR_CALM, or nghttp2's own refusal),
 * and the other hub's p99 rises less than 2x against its p99 measured in the same test without the attack.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import tls from 'node:tls';
import test from 'ava';
import { publicFrontendCertificate, routedShare, useBackend, useTestEdge } from '../helpers/edge.js';
import type { AttackKind, AttackSummary } from '../helpers/h2attack.js';
import { FLAG, FRAME, frame, getHeaders, headerBlock, rawH2 } from '../helpers/h2.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';
import { LATENCY_FLOOR_MS, underTwice } from '../helpers/latency.js';
import { scriptArgs } from '../helpers/script.js';

const stack = useStack(test, { env: { HUB_EDGE_FLUSH_MS: '600000' } });
/**
 * The attacked share's target is a process of its own, so that what the attacks make it do (a hundred held streams
 * per connection) is not work of this process, which serves the measured share's target and measures it. It counts
 * what reached it (`GET /count`, asked directly).
 */
const ATTACKED_TARGET = `
const http = require('node:http');
let reached = 0, held = 0;
const server = http.createServer((req, res) => {
  if (req.url === '/count') return res.end(JSON.stringify({ reached, held }));
  reached++;
  if (req.url === '/hold') { held++; return void res.writeHead(200).write('open'); }
  res.end('ok');
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;
let attackedTarget: { url: string; child: ChildProcess } | undefined;
/** What reached the attacked share's target so far: every request, and those for /hold. */
async function counts(): Promise<{ reached: number; held: number }> {
  const res = await fetch(`${attackedTarget!.url}/count`);
  return (await res.json()) as { reached: number; held: number };
}
async function startAttackedTarget(): Promise<void> {
  const child = spawn(process.execPath, ['-e', ATTACKED_TARGET], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()));
    child.once('exit', (code) => reject(new Error(`the attacked target exited ${code}`)));
  });
  attackedTarget = { url: `http://127.0.0.1:${port}`, child };
}
test.after.always(() => attackedTarget?.child.kill('SIGKILL'));
const backend = useBackend(test, stack, (_req, res) => res.end('ok'));
const edge = useTestEdge(test, stack);
let attacker: HubFixture;
let victim: HubFixture;
let attacked: string;
let measured: string;

test.before(async () => {
  await startAttackedTarget();
  attacker = await stack.hub({ name: 'h2-attacker' });
  victim = await stack.hub({ name: 'h2-victim' });
  await publicFrontendCertificate(stack.databaseUrl);
  attacked = (await routedShare(edge, attacker, { name: 'attacked', target: attackedTarget!.url })).host;
  measured = (await routedShare(edge, victim, { name: 'measured', target: backend.url })).host;
});

/** The other hub's p99 (ms) over `ms` of requests, two at a time on kept-alive connections. */
async function victimP99(ms: number): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
  const latencies: number[] = [];
  const deadline = Date.now() + ms;
  const loop = async () => {
    while (Date.now() < deadline) {
      const started = performance.now();
      await new Promise<void>((resolve, reject) =>
        http
          .get({ host: '127.0.0.1', port: edge.httpPort, path: '/', headers: { host: measured }, agent }, (res) => {
            res.resume();
            res.once('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
          })
          .on('error', reject),
      );
      latencies.push(performance.now() - started);
    }
  };
  await Promise.all([loop(), loop()]);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return latencies[Math.floor(latencies.length * 0.99)];
}

/** The attacker's process, started and loaded; `go()` starts the attack and resolves with its summary. */
async function attackerReady(kind: AttackKind, ms: number): Promise<{ go(): Promise<AttackSummary> }> {
  const child = spawn(process.execPath, scriptArgs('test/helpers/h2attack.ts', kind, String(edge.httpsPort), attacked, String(ms)), {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  const done = new Promise<AttackSummary>((resolve, reject) => {
    child.stdout.on('data', (d) => (out += d));
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out.slice(out.indexOf('\n') + 1))) : reject(new Error(`the attacker exited ${code}`))));
  });
  await new Promise<void>((resolve) => child.stdout.on('data', () => out.includes('ready') && resolve()));
  return {
    go() {
      child.stdin.end('go\n');
      return done;
    },
  };
}

const ENHANCE_YOUR_CALM = '11';

/**
 * Whether the edge completes an HTTP/2 TLS handshake from this address now (an earlier test's strike refuses HTTP/2
 * from it a while; HTTP/1.1 is admitted all along).
 */
const admitted = () =>
  new Promise<boolean>((resolve) => {
    const socket = tls.connect({ host: '127.0.0.1', port: edge.httpsPort!, servername: attacked, ALPNProtocols: ['h2'], rejectUnauthorized: false }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

test.serial('a CONTINUATION flood is cut within a few frames; a header list over 16 KiB is refused without reaching the target', async (t) => {
  const raw = await rawH2(edge.httpsPort!, attacked);
  raw.send(
    frame(
      FRAME.HEADERS,
      0,
      1,
      headerBlock([
        [':method', 'GET'],
        [':scheme', 'https'],
        [':path', '/'],
        [':authority', attacked],
      ]),
    ),
  );
  let sent = 0;
  while (!raw.socket.destroyed && sent < 10_000) {
    raw.send(frame(FRAME.CONTINUATION, 0, 1, headerBlock([['x-a', 'b']])));
    sent++;
    if (sent % 100 === 0) await new Promise((r) => setImmediate(r));
  }
  await raw.closed;
  // ended by the edge (GOAWAY, which a connection closed under a writer may not get to read), long before 10,000
  t.true(sent < 10_000, `cut after ${sent} CONTINUATION frames`);

  // the flood made this address wait a moment before its next TLS connection (edge/front/http2.ts Penalties)
  await new Promise((r) => setTimeout(r, 1000));
  const { reached: before } = await counts();
  const big = await rawH2(edge.httpsPort!, attacked);
  const block = headerBlock([
    [':method', 'GET'],
    [':scheme', 'https'],
    [':path', '/'],
    [':authority', attacked],
    ['x-big', 'b'.repeat(12_000)],
    ['x-big2', 'c'.repeat(5_000)],
  ]);
  big.send(frame(FRAME.HEADERS, FLAG.END_STREAM, 1, block.subarray(0, 16_000)), frame(FRAME.CONTINUATION, FLAG.END_HEADERS, 1, block.subarray(16_000)));
  const refusal = await big.next((f) => f.stream === 1 && f.type === FRAME.DATA);
  // the body of the edge's 400 names the limit (its code travels in the HPACK-coded head, not decoded here)
  t.like(JSON.parse(refusal.payload.toString()), { error: 'bad_request' });
  t.true(refusal.payload.toString().includes('over 16384 bytes'));
  t.is((await counts()).reached, before, 'nothing reached the target');
  // a header list of 17 KiB in one frame of the default size is over SETTINGS_MAX_FRAME_SIZE: the connection ends
  big.send(getHeaders(3, attacked, [['x-big', 'b'.repeat(17_000)]]));
  const goawayBig = await big.next((f) => f.type === FRAME.GOAWAY);
  t.is(goawayBig.payload.readUInt32BE(4), 6, 'FRAME_SIZE_ERROR');
  big.socket.destroy();
});

// 'streams' first: it is the one attack the edge does not answer with a strike against the address, and it needs a
// TLS connection the strikes of the others (each refusing 127.0.0.1 for a while) could delay
for (const [kind, ending] of [
  ['streams', undefined],
  ['rapid-reset', ENHANCE_YOUR_CALM],
  ['continuation', undefined],
  ['settings', ENHANCE_YOUR_CALM],
  ['ping', ENHANCE_YOUR_CALM],
  ['big-headers', ENHANCE_YOUR_CALM],
] as [AttackKind, string | undefined][]) {
  test.serial(`${kind}: the attacking connections are ended; another hub's p99 rises less than 2x`, async (t) => {
    // each attack starts from an address the edge admits: the strikes of the tests before it have expired
    /** One attack from a fresh attacker process, with the other hub's p99 before, during and after it. */
    const measured = async () => {
      // each attack starts from an address the edge admits: the strikes of the tests before it have expired
      await waitFor(admitted, { timeoutMs: 15_000, what: 'the edge admitting 127.0.0.1 again' });
      const attacker = await attackerReady(kind, 2500);
      await victimP99(500); // warm
      const before = await victimP99(2000);
      const { reached: reachedBefore, held: heldBefore } = await counts();
      const [summary, during] = await Promise.all([attacker.go(), victimP99(2000)]);
      const after = await victimP99(2000);
      const { reached, held } = await counts();
      t.log(
        `${kind}: p99 ${during.toFixed(2)} ms under attack, ${before.toFixed(2)} / ${after.toFixed(2)} ms without; ${JSON.stringify(summary)}; ${reached - reachedBefore} requests reached the target`,
      );
      return { summary, during, baseline: Math.max(before, after), held: held - heldBefore };
    };
    // a burst of the test file running beside this one can land in the attack's two seconds alone: a p99 over twice
    // the reference is measured once more with a new attack, and fails only if it is so again (an attack that costs
    // the other hub fails both, as the findings' 20 ms -> 235 ms did)
    let { summary, during, baseline, held } = await measured();
    if (!underTwice(during, baseline)) ({ summary, during, baseline, held } = await measured());
    t.true(summary.connections >= 1);
    // every connection was ended by the edge, not by the attacker's deadline alone
    const ended = Object.entries(summary.endings)
      .filter(([why]) => why !== 'deadline' && why !== 'refused')
      .reduce((n, [, c]) => n + c, 0);
    if (kind === 'streams') {
      // streams beyond the cap are refused: one by one (REFUSED_STREAM), or, once more than nghttp2's limit of refused
      // streams were opened, with the whole connection (whose RST_STREAM frames a busy attacker may never read);
      // either way no connection has more than the cap of streams at the target
      const refused = (summary.resets['7'] ?? 0) + ended;
      t.true(refused > 0, `REFUSED_STREAM or an ended connection seen: ${JSON.stringify(summary)}`);
      t.true(held <= 100 * summary.connections, `${held} streams reached the target over ${summary.connections} connections`);
    } else t.true(ended >= summary.connections - 1, `connections ended by the edge: ${JSON.stringify(summary.endings)}`);
    // the GOAWAY may be lost on a connection the attacker is still writing to when it closes
    if (ending) t.true((summary.endings[ending] ?? 0) + (summary.endings.closed ?? 0) >= 1, `GOAWAY ${ending} seen: ${JSON.stringify(summary.endings)}`);
    t.true(underTwice(during, baseline), `p99 ${during.toFixed(2)} ms against ${baseline.toFixed(2)} ms (at least ${LATENCY_FLOOR_MS} ms)`);
  });
}
