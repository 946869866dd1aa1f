/**
 * Several edges and TCP shares: every edge listens for every TCP share, on the same port. Two edge processes on one
 * host, each bound to an address of its own (HUB_EDGE_HOST=127.0.0.2 and 127.0.0.3), both listen on the port the
 * API gave a new share and carry its connections byte-exact to the target; deleting the share closes the port on
 * both (refused at once) and the connections open through each.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import net from 'node:net';
import test from 'ava';
import { freePort } from '../../scripts/services/index.js';
import { freeRange, publicFrontendId } from '../helpers/edge.js';
import { scriptArgs } from '../helpers/script.js';
import { useStack, waitFor } from '../helpers/stack.js';

const base = await freeRange(2);
const stack = useStack(test, { env: { HUB_EDGE_TCP_PORTS: `${base}-${base + 1}`, HUB_EDGE_FLUSH_MS: '600000', HUB_EDGE_UPSTREAM_TIMEOUT_MS: '5000' } });
const cleanups: (() => Promise<unknown>)[] = [];
stack.onStop(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

/** An edge process bound to `host` (HUB_EDGE_HOST), its TLS listener off. */
async function edgeProcess(host: string) {
  const httpPort = await freePort();
  const child = spawn(process.execPath, scriptArgs('edge/index.ts'), {
    env: { ...process.env, HUB_PROCESS: 'edge', HUB_EDGE_HOST: host, HUB_EDGE_HTTP_PORT: String(httpPort), HUB_EDGE_HTTPS_PORT: '0', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  cleanups.push(async () => {
    child.kill('SIGKILL');
    await exited;
  });
  await waitFor(async () => (await connectOutcome(host, httpPort)) === 'connected', { what: `the edge process on ${host} listening` });
  return { host, httpPort };
}

/** 'connected', or the error code a connection to host:port ends with. */
function connectOutcome(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once('connect', () => (socket.destroy(), resolve('connected')));
    socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
}

/** Sends `bytes` to host:port and ends; resolves with everything received until the other side's end. */
function exchange(host: string, port: number, bytes: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port, allowHalfOpen: true });
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('end', () => resolve(Buffer.concat(chunks)));
    socket.on('error', reject);
    socket.end(bytes);
  });
}

/** `work`'s value, or false when it has not settled within `ms`. */
function within<T>(work: Promise<T>, ms: number): Promise<T | false> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([work, new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)))]).finally(() => clearTimeout(timer));
}

/** What the system holds on `port` (ss), for a failure's message. */
function sockets(port: number): string {
  try {
    return execFileSync('ss', ['-tanp', `( sport = :${port} or dport = :${port} )`], { encoding: 'utf8' });
  } catch (err) {
    return (err as Error).message;
  }
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

test.serial(
  'two edge processes on addresses of their own both listen on a TCP share’s port and carry it; a delete closes the port and its connections on both',
  async (t) => {
    const echo = net.createServer({ allowHalfOpen: true }, (s) => (s.on('error', () => undefined), s.pipe(s)));
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((r) => echo.close(r)));
    const edges = [await edgeProcess('127.0.0.2'), await edgeProcess('127.0.0.3')];
    // bound where told, not on every address: the loopback address the tests use is not theirs
    for (const e of edges) t.is(await connectOutcome('127.0.0.1', e.httpPort), 'ECONNREFUSED');

    const hub = await stack.hub({ name: 'tcp-edges' });
    const created = await hub.call('POST', `${hub.h}/shares`, {
      body: { name: 'tcp', frontendIds: [await publicFrontendId(hub)], protocol: 'tcp', target: `tcp://127.0.0.1:${(echo.address() as net.AddressInfo).port}` },
    });
    t.is(created.status, 201, created.text);
    const port = Number(new URL(created.json.frontendEndpoint).port);
    t.true(port === base || port === base + 1);

    const data = Buffer.alloc(4 << 20);
    for (let i = 0; i < data.length; i += 4) data.writeUInt32LE((i * 2654435761) >>> 0, i);
    for (const e of edges) {
      await waitFor(async () => (await connectOutcome(e.host, port)) === 'connected', { what: `the edge on ${e.host} listening on ${port}` });
      const back = (await within(exchange(e.host, port, data), 30_000)) || Buffer.alloc(0);
      t.is(back.length, data.length, `through the edge on ${e.host}`);
      t.is(sha(back), sha(data), `through the edge on ${e.host}`);
    }

    // a connection held open through each edge, then the share deleted
    const open = await Promise.all(
      edges.map(
        (e) =>
          new Promise<{ closed: Promise<void> }>((resolve, reject) => {
            const socket = net.connect({ host: e.host, port, allowHalfOpen: true });
            socket.on('error', () => undefined);
            const closed = new Promise<void>((r) => socket.once('close', () => r()));
            socket.once('connect', () => socket.write('held', () => resolve({ closed })));
            socket.once('error', reject);
          }),
      ),
    );
    t.is((await hub.call('DELETE', `${hub.h}/shares/${created.json.zId}`)).status, 204);
    // bounded: an edge that never hears of the delete fails the test with what it still holds, not a hung run
    const stillOpen = await Promise.all(
      open.map((o) =>
        within(
          o.closed.then(() => true),
          20_000,
        ).then((closed) => !closed),
      ),
    );
    const kept = edges.filter((_, i) => stillOpen[i]).map((e) => e.host);
    t.deepEqual(kept, [], `edges still carrying a connection 20 s after the delete; sockets on the port: ${kept.length ? sockets(port) : ''}`);
    for (const e of edges) t.is(await within(connectOutcome(e.host, port), 5000), 'ECONNREFUSED', `the port on ${e.host} refuses`);
  },
);
