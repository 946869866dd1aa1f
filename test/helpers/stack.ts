import type { TestFn } from 'ava';
/**
 * Boots the real service inside a test file: its own database (cloned from the migrated template that `npm test`
 * prepared), its own BullMQ queue prefix on the shared redis-server, the Koa API on a free port, and (unless told
 * otherwise) the workers in-process. Everything is driven over HTTP.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import type { Server } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { Worker } from 'bullmq';
import pg from 'pg';
import { startServer, stopServer } from '../../api/server.js';
import { resetConfig } from '../../shared/config.js';
import { closeDb } from '../../shared/db.js';
import { closeQueues } from '../../domain/jobs/queues.js';
import { closeRedis } from '../../shared/redis.js';
import { startWorkers, stopWorkers } from '../../workers/runner.js';
import { type ProcessorDefinition } from '../../workers/processor.js';
import { processors, runWorkerStartHooks } from '../../workers/processors/index.js';
import { freePort } from '../../scripts/services/index.js';
import { registerExchangeSecrets, registerSecret } from './logScan.js';
import { checkContract } from './contract.js';
import { bounded } from './teardown.js';

export interface CallOptions {
  auth?: string;
  body?: unknown;
  /** Sent as is (no JSON encoding); set the content type yourself. */
  raw?: string | Buffer;
  headers?: Record<string, string>;
  /** false: skip the OpenAPI contract check (test/helpers/contract.ts) for this call, e.g. a server that is not the API. */
  contract?: boolean;
}

export interface Response<T = any> {
  status: number;
  json: T;
  text: string;
  headers: Headers;
}

export type Call = <T = any>(method: string, path: string, options?: CallOptions) => Promise<Response<T>>;

export interface HubFixture {
  hubId: string;
  keyId: string;
  username: string;
  token: string;
  bearer: string;
  basic: string;
  /** `call` with this hub's bearer token. */
  call: Call;
  /** `/hub/{hubId}` */
  h: string;
  /** `/hub/v2/{hubId}` */
  h2: string;
}

export interface Stack {
  baseUrl: string;
  adminToken: string;
  admin: string;
  databaseUrl: string;
  call: Call;
  hub(options?: { ipsec?: boolean; name?: string }): Promise<HubFixture>;
  startWorkers(extra?: ProcessorDefinition[]): Promise<void>;
  stopWorkers(): Promise<void>;
  stop(): Promise<void>;
}

async function createDatabase(name: string): Promise<string> {
  const base = process.env.TEST_POSTGRES_URL;
  const template = process.env.TEST_TEMPLATE_DB;
  if (!base || !template) throw new Error('run the tests with `npm test` (it starts PostgreSQL and Redis for them)');
  for (let attempt = 0; ; attempt++) {
    const client = new pg.Client({ connectionString: base });
    await client.connect();
    try {
      await client.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
      break;
    } catch (err) {
      // two clones of one template at the same instant: the second must wait its turn
      if (attempt > 50 || !/being accessed by other users/.test((err as Error).message)) throw err;
      await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
    } finally {
      await client.end();
    }
  }
  return base.replace(/\/[^/]*$/, `/${name}`);
}

export function makeCall(baseUrl: string, defaultAuth?: string): Call {
  return async (method, urlPath, options = {}) => {
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    const auth = options.auth ?? defaultAuth;
    if (auth) headers.authorization = auth;
    let body: string | Buffer | undefined;
    if (options.raw !== undefined) body = options.raw;
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(baseUrl + urlPath, { method, headers, body: body as BodyInit | undefined });
    const text = await res.text();
    let json: any;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    // every secret a test sends or receives is looked for in the run's logs afterwards (test/helpers/logScan.ts)
    registerExchangeSecrets(urlPath, options.body, { json, text });
    if (options.contract !== false)
      checkContract({
        method,
        path: urlPath,
        status: res.status,
        contentType: res.headers.get('content-type'),
        json,
        errorCode: res.headers.get('edgehub-error-code'),
      });
    return { status: res.status, json, text, headers: res.headers };
  };
}

export async function startStack(
  options: { workers?: boolean; processors?: ProcessorDefinition[]; env?: Record<string, string>; databaseUrl?: string } = {},
): Promise<Stack> {
  const id = randomBytes(5).toString('hex');
  // a database of the test's own making (migrated by it), or a clone of the migrated template
  const databaseUrl = options.databaseUrl ?? (await createDatabase(`t_${id}`));
  const port = await freePort();
  const adminToken = randomBytes(24).toString('base64url');
  registerSecret('admin token', adminToken);
  const dataDir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'data-'));
  Object.assign(process.env, {
    NODE_ENV: 'test',
    PORT: String(port),
    DATABASE_URL: databaseUrl,
    REDIS_URL: process.env.TEST_REDIS_URL,
    HUB_QUEUE_PREFIX: `t${id}`,
    HUB_ADMIN_TOKEN: adminToken,
    HUB_DATA_DIR: dataDir,
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    HUB_PROVISION_DELAY_MS: '20',
    // IPsec tests that want strongSwan say so (test/edge/ipsec-strongswan.test.ts); the others test the records
    HUB_IPSEC_PROVIDER: 'simulated',
    ...options.env,
  });
  resetConfig();
  const server: Server = await startServer(port);
  const baseUrl = `http://127.0.0.1:${port}`;
  const call = makeCall(baseUrl);
  const admin = `Bearer ${adminToken}`;
  let workers: Worker[] = [];

  const stack: Stack = {
    baseUrl,
    adminToken,
    admin,
    databaseUrl,
    call,
    async hub(opts = {}) {
      const hub = await call('POST', '/admin/v1/hubs', { auth: admin, body: { name: opts.name ?? `hub-${id}`, features: { ipsec: opts.ipsec ?? false } } });
      if (hub.status !== 201) throw new Error(`creating a hub failed: ${hub.status} ${hub.text}`);
      const key = await call('POST', `/admin/v1/hubs/${hub.json.id}/api-keys`, { auth: admin, body: { name: 'test' } });
      if (key.status !== 201) throw new Error(`creating an api key failed: ${key.status} ${key.text}`);
      const bearer = `Bearer ${key.json.token}`;
      return {
        hubId: hub.json.id,
        keyId: key.json.id,
        username: key.json.username,
        token: key.json.token,
        bearer,
        basic: 'Basic ' + Buffer.from(`${key.json.username}:${key.json.token}`).toString('base64'),
        call: makeCall(baseUrl, bearer),
        h: `/hub/${hub.json.id}`,
        h2: `/hub/v2/${hub.json.id}`,
      };
    },
    async startWorkers(extra = []) {
      await runWorkerStartHooks();
      workers = startWorkers({ processors: [...processors, ...(options.processors ?? []), ...extra] });
      await Promise.all(workers.map((w) => w.waitUntilReady()));
    },
    async stopWorkers() {
      await stopWorkers(workers);
      workers = [];
    },
    /** Each step in a stated time (the workers' and queues' own grace is 5 s); what is left past it is destroyed. */
    async stop() {
      await bounded('stopping the workers', 15_000, () => stack.stopWorkers());
      await bounded(
        'stopping the API server',
        10_000,
        () => stopServer(server),
        () => {
          server.closeAllConnections();
          return 'its open connections';
        },
      );
      await bounded('closing the job queues', 15_000, () => closeQueues());
      await bounded('closing the Redis connection', 5000, () => closeRedis());
      await bounded('closing the database pool', 10_000, () => closeDb());
    },
  };
  if (options.workers !== false) await stack.startWorkers();
  return stack;
}

/**
 * The stack of a test file: started before its tests, stopped after them (the API server with its issuance events,
 * the workers, the queues, Redis and the database pools). `const stack = useStack(test)` is the started Stack from
 * the first test on (reading it earlier throws). Cleanups given to `onStop` run first, the last registered first.
 * Options that depend on earlier set-up (a port a server got in a `test.before` registered before this call) are
 * given as a function, called when the stack starts. Hooks registered before this call run (and end) before the
 * stack starts or stops, those registered after it once it is up or stopped.
 */
type StackOptions = Parameters<typeof startStack>[0];
/** The stack of useStack: with `sql`, a small pool on its database for the tests' own SQL (closed before it stops). */
export type UsedStack = Stack & { onStop(step: () => Promise<unknown>): void; readonly sql: pg.Pool };
export function useStack(test: TestFn, options: StackOptions | (() => StackOptions) = {}): UsedStack {
  let current: UsedStack | undefined;
  let sql: pg.Pool | undefined;
  const steps: (() => Promise<unknown>)[] = [];
  // serial hooks: ava runs hooks concurrently otherwise. The stack starts once the hooks registered before this call
  // finished, and the hooks registered after it start once the stack is up; at the end likewise.
  test.serial.before(async () => {
    const stack = await startStack(typeof options === 'function' ? options() : options);
    current = Object.defineProperty(stack as UsedStack, 'sql', { get: () => (sql ??= new pg.Pool({ connectionString: stack.databaseUrl, max: 2 })) });
  });
  test.serial.after.always(async () => {
    // each clean-up a test file registered, then the stack: every step in a stated time (test/helpers/teardown.ts)
    for (const [i, step] of steps.reverse().entries()) await bounded(`the test file's clean-up step ${steps.length - i} (onStop)`, 60_000, step);
    await bounded("closing the tests' own database pool", 5000, async () => sql?.end());
    await current?.stop();
  });
  const onStop = (step: () => Promise<unknown>) => void steps.push(step);
  return started(() => current, 'the stack of useStack', { onStop });
}

/**
 * A fixture's value through a proxy, from when its `test.before` hook made it on (reading it earlier throws); the
 * properties of `own` are there from the start (useStack's onStop).
 */
export function started<T extends object>(value: () => T | undefined, what: string, own: Partial<T> = {}): T {
  return new Proxy({} as T, {
    get(_target, property) {
      if (Object.hasOwn(own, property)) return (own as Record<string | symbol, unknown>)[property];
      const current = value();
      if (!current) throw new Error(`${what} is read before its test.before hook made it`);
      const v = (current as Record<string | symbol, unknown>)[property];
      return typeof v === 'function' ? (v as (...args: unknown[]) => unknown).bind(current) : v;
    },
  });
}

/** Polls `probe` until it returns a truthy value (returned) or `timeoutMs` passes (throws with the last value). */
export async function waitFor<T>(
  probe: () => Promise<T>,
  { timeoutMs = 20_000, intervalMs = 50, what = 'condition' } = {},
): Promise<Exclude<T, undefined | null | false | 0 | ''>> {
  const deadline = Date.now() + timeoutMs;
  let last: T;
  for (;;) {
    last = await probe();
    if (last) return last as Exclude<T, undefined | null | false | 0 | ''>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last value: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
