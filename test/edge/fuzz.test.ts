/**
 * Differential fuzz of the upstream path: generated request byte streams (framing, hostile Connection lists,
 * underscore and identity headers, smuggling bodies, pipelining, malformed framing) and generated answer byte
 * streams (Content-Length, chunked with trailers, close-delimited, 1xx first, leftovers after the body, early
 * close, double lengths, bodies on HEAD and 204) go through the edge and through nginx to the same recording
 * target. A case fails when the target or the client sees, through the edge, something nginx would not let through
 * or that the target never sent: a request the client never made (smuggled), a request nginx refused, a forwarded
 * body other than the client's, an underscore or identity header, an answer other than the target's answer to that
 * request, a poisoned header, or a poisoned next answer on a reused target connection (a probe after each case).
 *
 * Bounded: FUZZ_CASES cases (default 160) or FUZZ_SECONDS (default 60), whichever ends first; loopback only.
 * The seed is printed; FUZZ_SEED replays a run.
 */
import net, { type AddressInfo } from 'node:net';
import test from 'ava';
import type { Edge } from '../../edge/server.js';
import { routedShare, startTestEdge } from '../helpers/edge.js';
import { startNginx, type Nginx } from '../helpers/nginx.js';
import { useStack } from '../helpers/stack.js';
import { parseMessages, type WireMessage } from '../helpers/wire.js';

const CASES = Number(process.env.FUZZ_CASES ?? 160);
const SECONDS = Number(process.env.FUZZ_SECONDS ?? 60);
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);

/** A small seeded PRNG (mulberry32): the same seed gives the same cases. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)], int: (n: number) => Math.floor(next() * n) };
}
type Rng = ReturnType<typeof prng>;

// ---------- answers the target writes ----------

interface Answer {
  kind: string;
  bytes: (method: string) => string;
  /** What the client may see as a complete answer: the target's own answer, or nothing (then only an error or a cut). */
  intended: { status: number; body: string } | null;
  /** The same for a HEAD request, when it differs (a head without its body is a whole answer to HEAD). */
  intendedHead?: { status: number; body: string } | null;
  close: boolean;
}

const POISON = 'poison';

function answerFor(rng: Rng, tag: string): Answer {
  const body = `body-${tag}-${'x'.repeat(rng.int(40))}`;
  const cl = (b: string) => `Content-Length: ${b.length}\r\n`;
  const variants: (() => Answer)[] = [
    () => ({
      kind: 'length',
      bytes: (m) => `HTTP/1.1 200 OK\r\nSet-Cookie: own=${tag}\r\n${cl(body)}\r\n${m === 'HEAD' ? '' : body}`,
      intended: { status: 200, body },
      close: false,
    }),
    () => ({
      kind: 'chunked+trailers',
      bytes: (m) =>
        m === 'HEAD'
          ? `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n`
          : `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: Set-Cookie\r\n\r\n${body.length.toString(16)};ext=1\r\n${body}\r\n0\r\nSet-Cookie: ${POISON}-trailer=1\r\nX-${POISON}: 1\r\n\r\n`,
      intended: { status: 200, body },
      close: false,
    }),
    () => ({
      kind: 'close-delimited',
      bytes: (m) => `HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n${m === 'HEAD' ? '' : body}`,
      intended: { status: 200, body },
      close: true,
    }),
    () => ({
      kind: '103 first',
      bytes: (m) => `HTTP/1.1 103 Early Hints\r\nLink: </x.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\n${cl(body)}\r\n${m === 'HEAD' ? '' : body}`,
      intended: { status: 200, body },
      close: false,
    }),
    () => ({
      kind: '100 first',
      bytes: (m) => `HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n${cl(body)}\r\n${m === 'HEAD' ? '' : body}`,
      intended: { status: 200, body },
      close: false,
    }),
    () => ({
      kind: 'leftover',
      bytes: (m) =>
        `HTTP/1.1 200 OK\r\n${cl(body)}\r\n${m === 'HEAD' ? '' : body}HTTP/1.1 403 Poisoned\r\nSet-Cookie: ${POISON}-left=1\r\nContent-Length: 6\r\n\r\n${POISON}`,
      intended: { status: 200, body },
      close: false,
    }),
    () => ({
      kind: 'early close',
      bytes: () => `HTTP/1.1 200 OK\r\nContent-Length: ${body.length + 50}\r\n\r\n${body}`,
      intended: null,
      intendedHead: { status: 200, body: '' },
      close: true,
    }),
    () => ({
      kind: 'two lengths',
      bytes: () => `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\nContent-Length: ${body.length + 6}\r\n\r\n${body}${POISON}`,
      intended: null,
      close: false,
    }),
    () => ({
      kind: 'length and chunked',
      bytes: () => `HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
      intended: null,
      close: false,
    }),
    () => ({
      kind: 'body on 204',
      bytes: () => `HTTP/1.1 204 No Content\r\nContent-Length: 6\r\n\r\n${POISON}`,
      intended: { status: 204, body: '' },
      close: false,
    }),
    () => ({
      kind: 'space before colon',
      bytes: () => `HTTP/1.1 200 OK\r\nSet-Cookie : ${POISON}-space=1\r\n${cl(body)}\r\n${body}`,
      intended: null,
      close: false,
    }),
  ];
  return rng.pick(variants)();
}

// ---------- requests the client writes ----------

interface ClientRequest {
  method: string;
  path: string;
  /** The body the client framed, as the target should receive it. */
  body: string;
  bytes: string;
}

interface Case {
  id: number;
  kind: string;
  requests: ClientRequest[];
  /** Malformed on purpose: a proxy may refuse it, and the target may see nothing. */
  malformed: boolean;
  bytes: string;
}

function makeCase(rng: Rng, id: number, host: string): Case {
  const n = rng.next() < 0.2 ? 2 : 1; // pipelined
  const requests: ClientRequest[] = [];
  let malformed = false;
  const kinds: string[] = [];
  for (let i = 0; i < n; i++) {
    const path = `/f/${id}/${i}`;
    const method = rng.pick(['GET', 'GET', 'POST', 'PUT', 'HEAD', 'DELETE']);
    const last = i === n - 1;
    const connection = rng.pick(['', 'content-length', 'host', 'transfer-encoding', 'x-keep', 'keep-alive, content-length, host']);
    const headers: string[] = [`Host: ${host}`];
    const tokens = [connection, last ? 'close' : ''].filter(Boolean).join(', ');
    if (tokens) headers.push(`Connection: ${tokens}`);
    if (rng.next() < 0.3) headers.push(`X_Client_Certificate_Name: admin`, `X-Client-Certificate-Name: forged`, `X-Forwarded_Email: boss@example.com`);
    if (rng.next() < 0.2) headers.push('X-Keep: kept-unless-listed');
    const smuggle = `GET /f/${id}/smuggled HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
    let body = '';
    const framing =
      method === 'GET' || method === 'HEAD' || method === 'DELETE'
        ? rng.pick(['none', 'none', 'length'])
        : rng.pick(['length', 'chunked', 'chunked-trailer', 'both', 'two-lengths', 'te-identity']);
    kinds.push(`${method}/${framing}/${connection || '-'}`);
    let framed = '';
    if (framing === 'length') {
      body = rng.next() < 0.5 ? smuggle : `data-${id}-${i}`;
      headers.push(`Content-Length: ${body.length}`);
      framed = body;
    } else if (framing === 'chunked' || framing === 'chunked-trailer') {
      body = smuggle;
      headers.push('Transfer-Encoding: chunked');
      framed = `${body.length.toString(16)}\r\n${body}\r\n0\r\n${framing === 'chunked-trailer' ? `X-Trailer-${POISON}: 1\r\n` : ''}\r\n`;
    } else if (framing === 'both') {
      body = smuggle;
      headers.push('Transfer-Encoding: chunked', 'Content-Length: 4');
      framed = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
      malformed = true;
    } else if (framing === 'two-lengths') {
      body = 'abcd';
      headers.push('Content-Length: 4', `Content-Length: ${4 + smuggle.length}`);
      framed = body + smuggle;
      malformed = true;
    } else if (framing === 'te-identity') {
      body = smuggle;
      headers.push('Transfer-Encoding: identity', `Content-Length: ${body.length}`);
      framed = body;
      malformed = true;
    }
    requests.push({ method, path, body, bytes: `${method} ${path} HTTP/1.1\r\n${headers.join('\r\n')}\r\n\r\n${framed}` });
  }
  return { id, kind: kinds.join(' + '), requests, malformed, bytes: requests.map((r) => r.bytes).join('') };
}

// ---------- the recording target ----------

interface Received {
  via: 'edge' | 'nginx';
  message: WireMessage;
}

// a target answer that never completes ends at the read timeout: 1 s on both proxies (a case waits that long)
const stack = useStack(test, { env: { HUB_EDGE_UPSTREAM_TIMEOUT_MS: '1000', HUB_EDGE_UPSTREAM_READ_TIMEOUT_MS: '1000', HUB_EDGE_FLUSH_MS: '600000' } });
stack.onStop(async () => {
  await edge?.stop(1000);
  await nginx?.stop();
  await new Promise<void>((r) => (target ? target.close(() => r()) : r()));
});
let edge: Edge;
let nginx: Nginx;
let target: net.Server;
const answers = new Map<string, Answer>();
let received: Received[] = [];
let current: 'edge' | 'nginx' = 'edge';

async function startTarget(): Promise<number> {
  target = net.createServer((socket) => {
    let buffer = '';
    socket.on('error', () => undefined);
    socket.on('data', (d: Buffer) => {
      buffer += d.toString('latin1');
      const parsed = parseMessages(buffer, 'request');
      buffer = parsed.rest;
      for (const message of parsed.messages) {
        if (!message.complete) continue;
        received.push({ via: current, message });
        const path = message.target ?? '';
        if (path.startsWith('/probe/')) {
          const probe = `probe-${path.slice(7)}`;
          socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${probe.length}\r\n\r\n${probe}`);
          continue;
        }
        const answer = answers.get(path);
        if (!answer) {
          socket.write('HTTP/1.1 404 Not Found\r\nContent-Length: 7\r\n\r\nunknown');
          continue;
        }
        socket.write(answer.bytes(message.method ?? 'GET'));
        if (answer.close) socket.end();
      }
      if (parsed.error) socket.destroy();
    });
  });
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  return (target.address() as AddressInfo).port;
}

/** Writes `bytes` on a new connection and reads until the proxy closes it (or 5 s). */
function exchange(port: number, bytes: string): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    const done = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closed });
    };
    const timer = setTimeout(() => done(false), 5000);
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    socket.on('close', () => done(true));
    socket.on('error', () => undefined);
    socket.write(bytes, 'latin1');
  });
}

test.before(async () => {
  edge = await startTestEdge();
  const port = await startTarget();
  nginx = await startNginx(port, 1);
});

const REFUSALS = new Set([400, 413, 431, 500, 501, 502, 503, 504, 508]);
const hasPoison = (m: WireMessage) => [...m.headers, ...m.trailers].some(([n, v]) => `${n}:${v}`.toLowerCase().includes(POISON)) || m.status === 403;

test(`differential fuzz of the upstream path against nginx (seed ${SEED})`, async (t) => {
  const hub = await stack.hub();
  const { host } = await routedShare(edge, hub, { target: `http://127.0.0.1:${(target.address() as AddressInfo).port}` });
  const rng = prng(SEED);
  const findings: string[] = [];
  const differences = new Map<string, number>();
  const deadline = Date.now() + SECONDS * 1000;
  let ran = 0;
  for (let id = 0; id < CASES && Date.now() < deadline; id++) {
    const c = makeCase(rng, id, host);
    for (const r of c.requests) answers.set(r.path, answerFor(rng, `${id}`));
    const outcome: Record<'edge' | 'nginx', { responses: WireMessage[]; error?: string; targetSaw: WireMessage[]; probe: WireMessage | undefined }> =
      {} as never;
    for (const via of ['nginx', 'edge'] as const) {
      current = via;
      received = [];
      const port = via === 'edge' ? edge.httpPort! : nginx.port;
      const { text, closed } = await exchange(port, c.bytes);
      const parsed = parseMessages(
        text,
        'response',
        c.requests.map((r) => r.method),
        closed,
      );
      const targetSaw = received.filter((r) => r.via === via && r.message.target?.startsWith(`/f/${id}/`)).map((r) => r.message);
      // a fresh client afterwards: whatever the case did to a pooled target connection must not reach it
      const probeText = await exchange(port, `GET /probe/${via}-${id} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      const probe = parseMessages(probeText.text, 'response', ['GET'], probeText.closed).messages[0];
      outcome[via] = { responses: parsed.messages, error: parsed.error, targetSaw, probe };
    }
    ran++;
    const e = outcome.edge;
    const n = outcome.nginx;
    const fail = (what: string) => findings.push(`case ${id} [${c.kind}] answers [${c.requests.map((r) => answers.get(r.path)?.kind).join(', ')}]: ${what}`);

    // the target: only requests the client made, each with the client's own body, no forged identities
    for (const m of e.targetSaw) {
      const request = c.requests.find((r) => r.path === m.target);
      if (!request) fail(`the target received ${m.method} ${m.target}, which the client never sent as a request`);
      else if (
        m.body !== request.body &&
        !(request.method === 'GET' || request.method === 'HEAD' || request.method === 'DELETE' ? m.body === '' || m.body === request.body : false)
      )
        fail(`the target received a body other than the client's for ${m.target}: ${JSON.stringify(m.body.slice(0, 60))}`);
      if (m.headers.some(([name]) => name.includes('_'))) fail(`a header with an underscore reached the target`);
      if (m.headers.some(([name, v]) => name.toLowerCase() === 'x-client-certificate-name' && v === 'forged'))
        fail('a forged identity header reached the target');
      if (m.headers.filter(([name]) => name.toLowerCase() === 'host').length !== 1) fail('the target did not receive exactly one Host');
      if (m.trailers.some(([name]) => name.toLowerCase().includes(POISON))) fail("the client's request trailer reached the target");
    }
    // a request nginx itself refused (4xx without reaching the target) must not reach the target through the edge
    for (const m of e.targetSaw) {
      const i = c.requests.findIndex((r) => r.path === m.target);
      const nginxAnswer = n.responses[i];
      const refusedByNginx =
        !n.targetSaw.some((x) => x.target === m.target) && nginxAnswer !== undefined && nginxAnswer.status! >= 400 && nginxAnswer.status! < 500;
      if (refusedByNginx) fail(`${m.target} reached the target through the edge, while nginx refused it (${nginxAnswer.status})`);
    }
    // the client: each complete answer is the target's own answer to that request, or a refusal of the edge
    e.responses.forEach((m, i) => {
      const request = c.requests[i];
      const planned = request && answers.get(request.path);
      const intended = planned && (request.method === 'HEAD' && planned.intendedHead !== undefined ? planned.intendedHead : planned.intended);
      if (hasPoison(m)) fail(`the client received a poisoned answer: ${m.status} ${JSON.stringify(m.headers)}`);
      if (!m.complete) return;
      if (REFUSALS.has(m.status!)) return;
      if (!request) return fail(`the client received more answers than it sent requests (${m.status})`);
      if (!intended) return fail(`the client received a complete ${m.status} where the target's answer was not a valid one`);
      const body = request.method === 'HEAD' ? '' : intended.body;
      if (m.status !== intended.status || m.body !== body)
        fail(`answer ${i}: ${m.status} ${JSON.stringify(m.body.slice(0, 60))} instead of ${intended.status} ${JSON.stringify(body.slice(0, 60))}`);
    });
    if (!e.probe || e.probe.status !== 200 || e.probe.body !== `probe-edge-${id}` || hasPoison(e.probe))
      fail(`the next client got ${e.probe ? `${e.probe.status} ${JSON.stringify(e.probe.body)}` : 'nothing'} instead of its own answer`);
    // differences that are not findings (the edge refusing where nginx passes, or the reverse), counted for the log
    const shape = (o: typeof e) => o.responses.map((m) => (m.complete ? m.status : `${m.status}-cut`)).join(',') || 'none';
    if (shape(e) !== shape(n)) {
      const key = `${answers.get(c.requests[0].path)?.kind}: nginx ${shape(n)} / edge ${shape(e)}`;
      differences.set(key, (differences.get(key) ?? 0) + 1);
    }
  }
  t.log(`seed ${SEED}: ${ran} cases in ${((SECONDS * 1000 - (deadline - Date.now())) / 1000).toFixed(1)} s`);
  for (const [key, count] of differences) t.log(`not a finding: ${key} (${count}x)`);
  t.true(ran >= Math.min(CASES, 40), `only ${ran} cases ran in the time budget`);
  t.deepEqual(findings, [], `replay with FUZZ_SEED=${SEED}`);
});
