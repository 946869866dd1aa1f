/**
 * The pool run of `npm run bench:agent` (after its direct/agent comparison): three agents of one environment in front
 * of the same target, which agent carried each request read from the edge's per-agent Prometheus series
 * (`edgehub_edge_agent_requests_total`, the edge's HUB_METRICS_PORT). Floors:
 * - weights 1:3 over 2,000 requests: each agent's share within 10 % of its weight's;
 * - a backup agent (priority 1) gets no request while a preferred one is usable, and takes new requests within 2 s of
 *   the preferred agents' going;
 * - a rolling restart of the three (each drained by SIGTERM, then started again) under BENCH_CONNECTIONS connections
 *   of load fails no request, at no less than 0.8 of the requests/s before it;
 * - a pool of three costs the edge no more CPU per request than one agent (the same run).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import autocannon from 'autocannon';
import type pg from 'pg';
import { benchAgent, type BenchCertificate } from './agentFixtures.js';
import { selfSignedCertificate } from '../test/helpers/selfSigned.js';
import { type BenchWorkspace, cpuMs, stopChild } from './harness.js';

export interface PoolBenchOptions {
  ws: BenchWorkspace;
  db: pg.Client;
  hubId: string;
  /** Makes an environment with one share to the bench's target; its host. */
  share: (envZId: string) => Promise<string>;
  /** The host of the single-agent share of the same run (the CPU comparison). */
  singleHost: string;
  edgePid: number | undefined;
  edgePort: number;
  edgeTlsPort: number;
  metricsPort: number;
  edgeCert: BenchCertificate;
  certs: string;
  connections: number;
  seconds: number;
}

interface PoolAgent {
  id: string;
  dir: string;
  args: string[];
  child: ChildProcess;
  exited: Promise<number | null>;
}

const get = (port: number, host: string, p = '/'): Promise<number> =>
  new Promise((resolve) => {
    http
      .get({ host: '127.0.0.1', port, path: p, headers: { host } }, (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode ?? 0));
      })
      .on('error', () => resolve(0));
  });

/** The edge's per-agent request counters, by agent id. */
async function agentRequests(metricsPort: number): Promise<Map<string, number>> {
  const text = await new Promise<string>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: metricsPort, path: '/metrics' }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^edgehub_edge_agent_requests_total\{[^}]*agent="([^"]+)"[^}]*\} (\d+)/gm)) out.set(m[1], Number(m[2]));
  return out;
}

export async function poolBench(o: PoolBenchOptions): Promise<string[]> {
  const envZId = `pool${randomBytes(3).toString('hex')}`;
  const host = await o.share(envZId);
  const agents: PoolAgent[] = [];
  const start = (agent: Omit<PoolAgent, 'child' | 'exited'>): Promise<PoolAgent> => {
    const child = spawn(process.execPath, ['agent/bin/edgehub.js', 'agent', 'run', '--dir', agent.dir, ...agent.args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    o.ws.onCleanup(() => stopChild(child));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    return new Promise((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (d) => {
        out += d;
        if (/connected to edge/.test(out)) resolve({ ...agent, child, exited });
      });
      child.once('exit', (code) => reject(new Error(`agent ${agent.id} exited (${code}) before it connected`)));
    });
  };
  for (const [i, args] of [
    ['--weight', '1'],
    ['--weight', '3'],
    ['--priority', '1'],
  ].entries()) {
    const dir = path.join(o.ws.work, `pool-agent-${i}`);
    const cert = selfSignedCertificate(o.certs, `pool-agent-${i}`, `/CN=pool agent ${i}`);
    const id = await benchAgent(o.db, { hubId: o.hubId, envZId, agent: cert, edgeCaPem: o.edgeCert.cert, edges: [`127.0.0.1:${o.edgeTlsPort}`], dir });
    agents.push(await start({ id, dir, args }));
  }
  for (let i = 0; i < 300 && (await get(o.edgePort, host)) !== 200; i++) await new Promise((r) => setTimeout(r, 100));
  const lines: string[] = [];

  // weights 1:3 over 2,000 requests (50 at a time), the backup none
  const before = await agentRequests(o.metricsPort);
  let failed = 0;
  for (let i = 0; i < 40; i++) failed += (await Promise.all(Array.from({ length: 50 }, () => get(o.edgePort, host)))).filter((s) => s !== 200).length;
  const after = await agentRequests(o.metricsPort);
  const got = agents.map((a) => (after.get(a.id) ?? 0) - (before.get(a.id) ?? 0));
  const total = got[0] + got[1] + got[2];
  const shareOf = (n: number) => (total ? n / total : 0);
  const within = Math.abs(shareOf(got[0]) - 0.25) <= 0.025 && Math.abs(shareOf(got[1]) - 0.75) <= 0.075 && got[2] === 0;
  lines.push(
    `pool weights 1:3 over ${total} requests: ${got[0]} and ${got[1]} (${(shareOf(got[0]) * 100).toFixed(1)} % and ${(shareOf(got[1]) * 100).toFixed(1)} %), backup ${got[2]}, failed ${failed} (target: within 10 % of 25 % and 75 %, backup 0) ${within && !failed ? 'ok' : 'MISSED'}`,
  );

  // CPU per request at the edge: the pool against the single agent, the same load
  const cpuPerRequest = async (h: string) => {
    const cpu = cpuMs(o.edgePid);
    const r = await new Promise<autocannon.Result>((resolve, reject) =>
      autocannon({ url: `http://127.0.0.1:${o.edgePort}`, connections: o.connections, duration: o.seconds, headers: { host: h } }, (err, result) =>
        err ? reject(err) : resolve(result),
      ),
    );
    return {
      perRequest: (cpuMs(o.edgePid) - cpu) / Math.max(1, r.requests.total),
      rps: r.requests.average,
      failed: r.non2xx + r.errors,
      total: r.requests.total,
    };
  };
  const single = await cpuPerRequest(o.singleHost);
  const pool = await cpuPerRequest(host);
  lines.push(
    `pool CPU per request at the edge: ${(pool.perRequest * 1000).toFixed(0)} µs with three agents, ${(single.perRequest * 1000).toFixed(0)} µs with one (ratio ${(pool.perRequest / single.perRequest).toFixed(2)}, target <= 1)`,
  );

  // rolling restart under load: each agent drained (SIGTERM) and started again, one at a time
  let instance: autocannon.Instance | undefined;
  const load = new Promise<autocannon.Result>((resolve, reject) => {
    instance = autocannon({ url: `http://127.0.0.1:${o.edgePort}`, connections: o.connections, duration: 3600, headers: { host } }, (err, result) =>
      err ? reject(err) : resolve(result),
    );
  });
  const rolling = Date.now();
  for (let i = 0; i < agents.length; i++) {
    agents[i].child.kill('SIGTERM');
    const code = await agents[i].exited;
    if (code !== 0) lines.push(`pool agent ${agents[i].id} exited ${code} after SIGTERM (expected 0)`);
    agents[i] = await start(agents[i]);
    // the edge has the agent's targets once it says it is connected; a moment for the next one's drain to matter
    await new Promise((r) => setTimeout(r, 500));
  }
  const restartSeconds = (Date.now() - rolling) / 1000;
  instance?.stop();
  const result = await load;
  const rollFailed = result.non2xx + result.errors;
  lines.push(
    `pool rolling restart: failed ${rollFailed} of ${result.requests.total} requests, ${result.requests.average.toFixed(0)} req/s during the restart (${restartSeconds.toFixed(1)} s) against ${pool.rps.toFixed(0)} before (ratio ${(result.requests.average / pool.rps).toFixed(2)}, target >= 0.8; failed target 0)`,
  );

  // backup: the preferred agents go; the first request the backup answers, and how long after
  const gone = Date.now();
  agents[0].child.kill('SIGKILL');
  agents[1].child.kill('SIGKILL');
  await Promise.all([agents[0].exited, agents[1].exited]);
  let takeover = Number.NaN;
  const backupBefore = (await agentRequests(o.metricsPort)).get(agents[2].id) ?? 0;
  for (let i = 0; i < 200; i++) {
    if ((await get(o.edgePort, host)) === 200 && ((await agentRequests(o.metricsPort)).get(agents[2].id) ?? 0) > backupBefore) {
      takeover = (Date.now() - gone) / 1000;
      break;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  lines.push(`pool backup took new requests ${takeover.toFixed(2)} s after the preferred agents went (target <= 2 s)`);
  return lines;
}
