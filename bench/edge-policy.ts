/**
 * `npm run bench:edge-policy`: what a share's traffic policy costs on the edge's hot path. One edge process (as the
 * Procfile runs it, Redis counting the rate limit), one node:http backend, three ACTIVE shares of one hub on the
 * edge's HTTP listener: a plain one (the baseline), the same with a policy of 1,000 CIDRs (the client's among them),
 * a rate limit it never reaches and three header rules, and one whose rate limit the client is over (every request
 * refused 429). The same autocannon client (keep-alive connections) loads the first two in alternating rounds, then
 * the third. Prints requests/s and p99 of both, their ratio, and the edge's CPU per proxied and per refused request.
 *
 * BENCH_CONNECTIONS (default 50), BENCH_SECONDS per round (default 8), BENCH_ROUNDS (default 3).
 */
import autocannon from 'autocannon';
import pg from 'pg';
import { benchShares, benchWorkspace, cpuMs, freePort, median, startEdgeProcess, startPlainBackend, startServices, stopChild } from './harness.js';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

/** 1,000 CIDRs: 999 /24s of 10.0.0.0/8 and the loopback network the client is on. */
const cidrs = [...Array.from({ length: 999 }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.0/24`), '127.0.0.0/8'];
const headerRules = { requestHeaders: { set: { 'X-Team': 'blue' }, remove: ['X-Debug'] }, responseHeaders: { set: { 'Cache-Control': 'no-store' } } };

const ws = benchWorkspace({ budgetMs: 10 * 60_000 });
try {
  const services = await startServices(ws);
  const { port: backendPort } = await startPlainBackend(ws);
  const db = new pg.Client({ connectionString: services.databaseUrl });
  await db.connect();
  const { zIds, hosts } = await benchShares(db, `http://127.0.0.1:${backendPort}`, [{ name: 'plain' }, { name: 'policy' }, { name: 'over-limit' }]);
  await db.query(`UPDATE shares SET policy = $2 WHERE z_id = $1`, [
    zIds[1],
    JSON.stringify({ ipAllow: cidrs, rateLimit: { requests: 1_000_000, per: 'PT1S', by: 'client-ip' }, ...headerRules }),
  ]);
  await db.query(`UPDATE shares SET policy = $2 WHERE z_id = $1`, [zIds[2], JSON.stringify({ rateLimit: { requests: 1, per: 'P1D', by: 'client-ip' } })]);
  await db.end();
  const [plainHost, policyHost, overHost] = hosts;

  const edgePort = await freePort();
  const edge = startEdgeProcess(ws, services, { HUB_EDGE_HTTP_PORT: String(edgePort), HUB_EDGE_HTTPS_PORT: '0', LOG_LEVEL: 'warn' });
  const load = (host: string, seconds: number) =>
    new Promise<autocannon.Result>((resolve, reject) =>
      autocannon({ url: `http://127.0.0.1:${edgePort}`, connections: CONNECTIONS, duration: seconds, headers: { host } }, (err, result) =>
        err ? reject(err) : resolve(result),
      ),
    );
  for (let i = 0; ; i++) {
    const r = await load(policyHost, 1).catch(() => undefined);
    if (r && r.non2xx === 0 && r.errors === 0 && r['2xx'] > 0) break;
    if (i > 60 || edge.exitCode !== null) throw new Error('the edge did not route the shares');
    await new Promise((res) => setTimeout(res, 250));
  }
  await load(plainHost, 2);
  type Side = 'plain' | 'policy';
  const results: Record<Side, autocannon.Result[]> = { plain: [], policy: [] };
  const cpu: Record<Side | 'refused', { ms: number; requests: number }> = {
    plain: { ms: 0, requests: 0 },
    policy: { ms: 0, requests: 0 },
    refused: { ms: 0, requests: 0 },
  };
  const measured = async (side: Side | 'refused', host: string) => {
    const before = cpuMs(edge.pid);
    const r = await load(host, SECONDS);
    cpu[side].ms += cpuMs(edge.pid) - before;
    cpu[side].requests += r.requests.total;
    return r;
  };
  for (let round = 0; round < ROUNDS; round++) {
    const order: [Side, string][] =
      round % 2
        ? [
            ['policy', policyHost],
            ['plain', plainHost],
          ]
        : [
            ['plain', plainHost],
            ['policy', policyHost],
          ];
    for (const [name, host] of order) {
      const r = await measured(name, host);
      if (r.non2xx || r.errors) throw new Error(`${name}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
      results[name].push(r);
    }
  }
  const refused = await measured('refused', overHost);
  if (refused['2xx'] > 1) throw new Error(`the over-limit share served ${refused['2xx']} requests`);
  await stopChild(edge);
  const rps = (name: Side) => median(results[name].map((r) => r.requests.average));
  const p99 = (name: Side) => median(results[name].map((r) => r.latency.p99));
  const perRequest = (side: Side | 'refused') => (cpu[side].ms * 1000) / Math.max(1, cpu[side].requests);
  const line = (name: string, r: number, p: number) => `${name.padEnd(34)} ${r.toFixed(0).padStart(8)} req/s   p99 ${p.toFixed(1).padStart(6)} ms`;
  console.log(`\nbench:edge-policy — ${CONNECTIONS} keep-alive connections, ${ROUNDS} x ${SECONDS} s per share (medians)`);
  console.log(line('share without a policy', rps('plain'), p99('plain')));
  console.log(line('1,000 CIDRs, rate limit, 3 headers', rps('policy'), p99('policy')));
  console.log(
    `ratio ${(rps('policy') / rps('plain')).toFixed(2)} of the same share without a policy (requests/s); p99 ${(p99('policy') / p99('plain')).toFixed(2)}x`,
  );
  console.log(
    `edge CPU per request: proxied ${perRequest('plain').toFixed(1)} µs (with the policy ${perRequest('policy').toFixed(1)} µs), refused over the rate limit ${perRequest('refused').toFixed(1)} µs (${refused.requests.total} refused)`,
  );
  console.log(
    `rounds: plain ${results.plain.map((r) => r.requests.average.toFixed(0)).join(', ')}; policy ${results.policy.map((r) => r.requests.average.toFixed(0)).join(', ')}`,
  );
} finally {
  await ws.cleanUp();
}
process.exit(0);
