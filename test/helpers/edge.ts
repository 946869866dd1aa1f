/**
 * The edge in tests: an in-process edge on free loopback ports against the stack's database, raw HTTP(S) requests
 * to it with any Host (Node's resolver does not map *.localhost to loopback), and shares made ACTIVE and routed.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TestFn } from 'ava';
import pg from 'pg';
import { startEdge, type Edge, type EdgeOptions } from '../../edge/server.js';
import { started, waitFor, type HubFixture, type UsedStack } from './stack.js';

export async function startTestEdge(options: EdgeOptions = {}): Promise<Edge> {
  return startEdge({ httpPort: 0, httpsPort: 0, host: '127.0.0.1', ...options });
}

/** The edge of a test file: started once the stack (useStack, called before this) is up, stopped before it stops. */
export function useTestEdge(test: TestFn, stack: UsedStack, options: EdgeOptions = {}): Edge {
  let edge: Edge | undefined;
  test.serial.before(async () => {
    edge = await startTestEdge(options);
  });
  stack.onStop(async () => edge?.stop(1000));
  return started(() => edge, 'useTestEdge');
}

export interface EdgeAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  text: string;
  json: any;
}

export interface EdgeRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Over TLS: the server name to send (defaults to the host) and what to trust / present. */
  tls?: { servername?: string; ca?: string | string[]; cert?: string; key?: string; rejectUnauthorized?: boolean };
  agent?: http.Agent | false;
}

/** One request to the edge at 127.0.0.1:port with `Host: host`. */
export function edgeRequest(port: number, host: string, request: EdgeRequest = {}): Promise<EdgeAnswer> {
  return new Promise((resolve, reject) => {
    const options: https.RequestOptions = {
      host: '127.0.0.1',
      port,
      method: request.method ?? 'GET',
      path: request.path ?? '/',
      headers: { host, ...request.headers },
      agent: request.agent ?? false,
    };
    const client = request.tls ? https : http;
    if (request.tls) {
      Object.assign(options, {
        servername: request.tls.servername ?? host,
        ca: request.tls.ca,
        cert: request.tls.cert,
        key: request.tls.key,
        rejectUnauthorized: request.tls.rejectUnauthorized ?? true,
      });
    }
    const req = client.request(options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        const text = body.toString();
        let json: any;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(request.body);
  });
}

/** Waits for the public frontend's certificate (the worker's first start issues it; TLS tests and agents need it). */
export async function publicFrontendCertificate(databaseUrl: string): Promise<void> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    await waitFor(async () => (await db.query(`SELECT 1 FROM edge_certificates WHERE domain = 'share.localhost'`)).rowCount! > 0, {
      what: 'the public frontend certificate',
    });
  } finally {
    await db.end();
  }
}

export async function publicFrontendId(hub: HubFixture): Promise<string> {
  const frontends = await hub.call('GET', `${hub.h}/frontends`);
  return frontends.json.find((f: { publicName: string }) => f.publicName === 'public').id;
}

/** Creates a share and waits until it is ACTIVE and the edge routes its host (the edge learns of it within 2 s). */
export async function routedShare(edge: Edge, hub: HubFixture, body: Record<string, unknown>): Promise<{ zId: string; host: string; json: any }> {
  const created = await hub.call('POST', `${hub.h}/shares`, { body: { name: 'web', frontendIds: [await publicFrontendId(hub)], ...body } });
  if (created.status !== 201) throw new Error(`share create failed: ${created.status} ${created.text}`);
  const json = await waitFor(
    async () => {
      const r = await hub.call('GET', `${hub.h}/shares/${created.json.zId}`);
      return r.json.status === 'ACTIVE' && r.json;
    },
    { what: 'share ACTIVE' },
  );
  const host = new URL(json.frontendEndpoint).hostname;
  await waitFor(async () => edge.routes.lookup(host), { timeoutMs: 2000, what: `the edge routing ${host}` });
  return { zId: json.zId, host, json };
}

export interface Backend {
  url: string;
  port: number;
  server: http.Server;
  close(): Promise<void>;
}

/** The share target of a test file (startBackend), closed before the stack stops: call it before useTestEdge. */
export function useBackend(test: TestFn, stack: UsedStack, handler: http.RequestListener): Backend {
  let backend: Backend | undefined;
  test.serial.before(async () => {
    backend = await startBackend(handler);
  });
  stack.onStop(async () => backend?.close());
  return started(() => backend, 'useBackend');
}

/** A loopback HTTP server for share targets. */
export async function startBackend(handler: http.RequestListener): Promise<Backend> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Reads a whole request body. */
export function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** `n` consecutive ports nothing listens on now and nothing is handed later (for HUB_EDGE_TCP_PORTS); the first of them. */
export async function freeRange(n: number): Promise<number> {
  // below the kernel's ephemeral range: a port there is never handed out as some connection's source port or to a
  // listen on port 0 between this check and the test's own listen (in the range, a port free now was taken later)
  const ephemeralStart = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32_768;
  const low = 10_000;
  const span = Math.max(1_000, ephemeralStart - low - n);
  for (;;) {
    const base = low + Math.floor(Math.random() * span);
    const servers: net.Server[] = [];
    try {
      for (let i = 0; i < n; i++) {
        const s = net.createServer();
        await new Promise<void>((resolve, reject) => s.once('error', reject).listen(base + i, '0.0.0.0', resolve));
        servers.push(s);
      }
      return base;
    } catch {
      /* taken: another base */
    } finally {
      for (const s of servers) await new Promise((r) => s.close(r));
    }
  }
}
