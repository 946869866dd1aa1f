/**
 * `npm run bench:failover`: what a failover of each part costs, under steady load. The set-up of `npm run start:ha`
 * (PostgreSQL with a synchronous standby behind a moving address, Redis with a replica and three sentinels, two nodes
 * each running `npm start`), a direct share and an agent-served share (one agent, connected to both edges), and a load
 * of API creates and reads, requests to both shares and certificate enrollments (bench/failoverLoad.ts). Each fault in
 * turn: the Redis master SIGKILLed (Sentinel promotes the replica), the PostgreSQL primary SIGKILLed (the standby is
 * promoted and the address moves), node 1 SIGKILLed (every process of it). Printed per fault: requests sent and failed
 * by path during its window, seconds from the fault (and from the engine's own failover) until every path succeeds
 * again, acknowledged writes lost (2xx creates whose rows are missing afterwards), executions not finished 60 s after
 * recovery, and the memory of the edges; then one summary line per fault.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import pg from 'pg';
import { type HaStores, startHaStores } from '../scripts/services/haStores.js';
import { nodeEnv, startNode } from '../scripts/start-ha.js';
import { deviceCsr } from './deviceCsr.js';
import { Balancer, PATHS, type Acknowledged, type Load, type Outcome, startLoad } from './failoverLoad.js';
import { benchWorkspace, freePort, timed } from './harness.js';

const ws = benchWorkspace({ budgetMs: 25 * 60_000 });
const adminToken = 'bench-failover-admin-token-0123456789';
const lines: string[] = [];
const say = (line: string) => console.log(line);

async function json(port: number, method: string, urlPath: string, auth: string | undefined, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`http://127.0.0.1:${port}${urlPath}`, {
    method,
    headers: { accept: 'application/json', ...(auth ? { authorization: auth } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, ms = 120_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s; last lines:\n${lines.slice(-15).join('\n')}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function edgeGet(port: number, host: string): Promise<number> {
  return new Promise((resolve) => {
    http
      .get({ host: '127.0.0.1', port, path: '/', headers: { host }, agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
      .on('error', () => resolve(0));
  });
}

/** The pids of the edge processes each node's supervisor reported. */
function edgePids(node: string): number[] {
  return [
    ...new Set(
      lines
        .filter((l) => l.startsWith(`[${node}]`))
        .map((l) => /\bedge(?:\.\d+)? started \(pid (\d+)/.exec(l)?.[1])
        .filter(Boolean)
        .map(Number),
    ),
  ];
}

function rssMb(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
  } catch {
    return NaN;
  }
}

interface Window {
  fault: 'redis' | 'postgres' | 'node';
  start: number;
  faultAt: number;
  engineDoneAt: number;
  end: number;
}

async function main(): Promise<void> {
  const stores: HaStores = await startHaStores(path.join(ws.work, 'stores'), { log: (l) => lines.push(l) });
  ws.onCleanup(() => stores.stop());
  const target = http.createServer((_req, res) => res.end('ok'));
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  ws.onCleanup(() => new Promise((r) => target.close(r)));
  const targetUrl = `http://127.0.0.1:${(target.address() as { port: number }).port}`;

  const nodes: { name: string; api: number; edge: number; tls: number; pid: number; exited: Promise<unknown> }[] = [];
  for (let i = 0; i < 2; i++) {
    const name = `node-${i + 1}`;
    const [api, edge, tls, tcp] = [await freePort(), await freePort(), await freePort(), await freePort()];
    const child = startNode(
      name,
      {
        ...nodeEnv(stores.env, {
          dataDir: path.join(ws.work, name),
          adminToken,
          secretKeyHex: '22'.repeat(32),
          port: api,
          edgeHttp: edge,
          edgeHttps: tls,
          tcpFrom: tcp,
          tcpTo: tcp,
        }),
        HUB_UNAUTH_RATE_LIMIT: '0',
      },
      (l) => lines.push(l),
    );
    const exited = new Promise((r) => child.once('exit', r));
    ws.onCleanup(async () => {
      try {
        process.kill(-child.pid!, 'SIGINT');
      } catch {
        return;
      }
      await exited;
    });
    nodes.push({ name, api, edge, tls, pid: child.pid!, exited });
    await until(`${name} healthy`, async () => (await json(api, 'GET', '/healthz', undefined)).status === 200, 240_000);
  }
  say(
    `set-up: PostgreSQL ${stores.postgres.primary.port} (standby ${stores.postgres.standby.port}, address ${stores.relay.port}); Redis sentinels ${stores.redis.sentinelList}; nodes ${nodes.map((n) => `${n.name} API ${n.api} edge ${n.edge}`).join(', ')}`,
  );

  const admin = `Bearer ${adminToken}`;
  const [one] = nodes;
  const hub = await json(one.api, 'POST', '/admin/v1/hubs', admin, { name: 'failover' });
  const key = await json(one.api, 'POST', `/admin/v1/hubs/${hub.json.id}/api-keys`, admin, { name: 'bench' });
  const bearer = `Bearer ${key.json.token}`;
  const h = `/hub/${hub.json.id}`;
  const frontends = await json(one.api, 'GET', `${h}/frontends`, bearer);
  const publicId = frontends.json.find((f: { publicName: string }) => f.publicName === 'public').id;
  const direct = await json(one.api, 'POST', `${h}/shares`, bearer, { name: 'direct', frontendIds: [publicId], target: targetUrl });
  const env = await json(one.api, 'POST', `${h}/environments`, bearer, { description: 'agent' });
  const enrollment = await json(one.api, 'POST', `${h}/environments/${env.json.envZId}/agent-enrollment`, bearer, {});
  const agentDir = path.join(ws.work, 'agent');
  await new Promise<void>((resolve, reject) => {
    const c = spawn(process.execPath, ['agent/bin/edgehub.js', 'agent', 'enroll', enrollment.json.jwt, '--dir', agentDir], { stdio: 'inherit' });
    c.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`agent enroll exited ${code}`))));
  });
  const agent = spawn(process.execPath, ['agent/bin/edgehub.js', 'agent', 'run', '--dir', agentDir], { stdio: ['ignore', 'pipe', 'pipe'] });
  agent.stdout!.on('data', (d: Buffer) => lines.push(`[agent] ${d.toString().trim()}`));
  ws.onCleanup(async () => agent.kill('SIGKILL'));
  const agentShare = await json(one.api, 'POST', `${h}/shares`, bearer, { name: 'agent', frontendIds: [publicId], target: targetUrl, envZId: env.json.envZId });
  const directHost = new URL(direct.json.frontendEndpoint).hostname;
  const agentHost = new URL(agentShare.json.frontendEndpoint).hostname;
  for (const n of nodes) {
    await until(`${n.name}'s edge serving both shares`, async () => (await edgeGet(n.edge, directHost)) === 200 && (await edgeGet(n.edge, agentHost)) === 200);
  }

  const jwts: { jwt: string; commonName: string }[] = [];
  await timed(300, 8, async (i) => {
    const commonName = `device-${i}.failover.example`;
    const tok = await json(one.api, 'POST', `${h}/certificate-request-tokens`, bearer, { name: `device-${i}`, commonName });
    const jwt = await json(one.api, 'GET', `/hub/v2/${hub.json.id}/certificate-request-tokens/${tok.json.id}/enrollment-jwt`, bearer);
    jwts.push({ jwt: jwt.json.jwt, commonName });
  });

  const balancer = new Balancer(nodes.map((n) => ({ api: n.api, edge: n.edge })));
  const load: Load = startLoad({ balancer, bearer, hubPath: h, directHost, agentHost, jwts, csr: deviceCsr });
  const windows: Window[] = [];
  const runWindow = async (fault: Window['fault'], inject: () => Promise<number>) => {
    const start = Date.now();
    await new Promise((r) => setTimeout(r, 5000));
    const faultAt = Date.now();
    const engineDoneAt = await inject();
    // recovered: every path succeeded since its last failure, for 5 s, or 60 s have passed
    await until(
      `${fault}: every path succeeding again`,
      async () => {
        const since = Date.now() - 5000;
        return PATHS.every((p) => !load.outcomes.some((o) => o.path === p && !o.ok && o.at > since)) && Date.now() - engineDoneAt > 5000;
      },
      90_000,
    ).catch(() => undefined);
    windows.push({ fault, start, faultAt, engineDoneAt, end: Date.now() });
  };
  await runWindow('redis', async () => {
    await stores.redis.killMaster();
    return Date.now();
  });
  await runWindow('postgres', async () => {
    stores.postgres.primary.kill();
    await stores.promoted;
    return Date.now();
  });
  const memoryBefore = nodes.flatMap((n) => edgePids(n.name)).map(rssMb);
  await runWindow('node', async () => {
    process.kill(-one.pid, 'SIGKILL');
    await one.exited;
    return Date.now();
  });
  await load.stop();

  // what must be there: every acknowledged create, on the promoted PostgreSQL
  const db = new pg.Client({ connectionString: stores.databaseUrl });
  await db.connect();
  const present = async (table: string, column: string, items: Acknowledged[]) => {
    if (!items.length) return new Set<string>();
    const { rows } = await db.query(`SELECT ${column} AS id FROM ${table} WHERE ${column} = ANY($1)`, [items.map((i) => i.id)]);
    return new Set(rows.map((r: { id: string }) => r.id));
  };
  const envs = await present('environments', 'env_z_id', load.acknowledged.environments);
  const certs = await present('client_certificates', 'id', load.acknowledged.certificates);
  // executions: every one finished within 60 s of the last recovery
  const unfinishedAt = Date.now() + 60_000;
  let unfinished = Number.NaN;
  while (Date.now() < unfinishedAt) {
    unfinished = (await db.query(`SELECT count(*)::int AS n FROM executions WHERE status IN ('QUEUED', 'RUNNING')`)).rows[0].n;
    if (unfinished === 0) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  await db.end();
  const memoryAfter = edgePids('node-2').map(rssMb);

  const summaries: string[] = [];
  for (const w of windows) {
    const inWindow = (o: Outcome) => o.at >= w.start && o.at <= w.end;
    const byPath = PATHS.map((p) => {
      const mine = load.outcomes.filter((o) => o.path === p && inWindow(o));
      const failed = mine.filter((o) => !o.ok);
      const lastFailure = failed.length ? Math.max(...failed.map((o) => o.at)) : undefined;
      return { p, sent: mine.length, failed: failed.length, lastFailure };
    });
    const lastFailure = Math.max(w.faultAt, ...byPath.map((b) => b.lastFailure ?? 0));
    const recovered = (lastFailure - w.faultAt) / 1000;
    const sinceEngine = Math.max(0, (lastFailure - w.engineDoneAt) / 1000);
    const lost =
      load.acknowledged.environments.filter((a) => a.at >= w.start && a.at <= w.end && !envs.has(a.id)).length +
      load.acknowledged.certificates.filter((a) => a.at >= w.start && a.at <= w.end && !certs.has(a.id)).length;
    const edgeFailed = byPath.filter((b) => b.p.startsWith('edge')).reduce((n, b) => n + b.failed, 0);
    say(`\n${w.fault}: engine failover done ${((w.engineDoneAt - w.faultAt) / 1000).toFixed(1)} s after the fault`);
    for (const b of byPath)
      say(
        `  ${b.p.padEnd(12)} sent ${String(b.sent).padStart(6)}  failed ${String(b.failed).padStart(5)}${b.lastFailure ? `  last failure ${((b.lastFailure - w.faultAt) / 1000).toFixed(1)} s after the fault` : ''}`,
      );
    say(`  every path succeeding again ${recovered.toFixed(1)} s after the fault, ${sinceEngine.toFixed(1)} s after the engine's failover finished`);
    summaries.push(
      `failover ${w.fault}: acknowledged writes lost ${lost}, executions unfinished ${unfinished}, edge requests failed ${edgeFailed}, recovered in ${sinceEngine.toFixed(1)} s`,
    );
  }
  say(
    `\nedge memory (RSS, MB): before the node fault ${memoryBefore.map((m) => m.toFixed(0)).join(', ')}; node 2 after everything ${memoryAfter.map((m) => m.toFixed(0)).join(', ')}`,
  );
  say(
    `acknowledged: ${load.acknowledged.environments.length} environment creates, ${load.acknowledged.certificates.length} enrollments; executions unfinished 60 s after the last recovery: ${unfinished}`,
  );
  say('');
  for (const s of summaries) say(s);
}

try {
  await main();
} catch (err) {
  console.error(`bench:failover failed: ${(err as Error).message}`);
  process.exitCode = 1;
} finally {
  await ws.cleanUp();
}
