/**
 * `npm run bench:tcp`: throughput of TCP shares against the direct connection, in one run. A sink process reads
 * everything sent to it and answers the byte count at the end; the same client sends BENCH_MIB MiB (default 512)
 * (a) straight to the sink, (b) through a TCP share the edge carries directly, (c) through a TCP share of an
 * environment served by an agent (`edgehub agent run`, a process of its own). Rounds alternate; medians are
 * compared (targets: direct share >= 0.6, agent share >= 0.4 of the direct connection). Prints the load average.
 *
 * BENCH_MIB (default 512), BENCH_ROUNDS (default 3).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { benchAgent, selfSignedCertificate } from './agentFixtures.js';
import { benchWorkspace, freePort, median, startEdgeProcess, startServices, stopChild } from './harness.js';

const MIB = Number(process.env.BENCH_MIB ?? 512);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const SINK = `
const net = require('node:net');
const server = net.createServer({ allowHalfOpen: true }, (s) => { let n = 0; s.on('data', (d) => (n += d.length)); s.on('end', () => s.end(String(n))); s.on('error', () => {}); });
server.listen(Number(process.argv[1]), '127.0.0.1', () => process.stdout.write('ready\\n'));
`;

const ws = benchWorkspace({ budgetMs: 15 * 60_000 });
try {
  const services = await startServices(ws);
  const sinkPort = await freePort();
  const sink = spawn(process.execPath, ['-e', SINK, String(sinkPort)], { stdio: ['ignore', 'pipe', 'inherit'] });
  ws.onCleanup(() => stopChild(sink));
  await new Promise<void>((resolve) => sink.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve()));

  const certs = path.join(ws.work, 'certs');
  mkdirSync(certs, { recursive: true });
  const edgeCert = selfSignedCertificate(certs, 'edge', '/CN=share.localhost', 'DNS:*.share.localhost,DNS:share.localhost');
  const agentCert = selfSignedCertificate(certs, 'agent', '/CN=bench agent');
  const db = new pg.Client({ connectionString: services.databaseUrl });
  db.on('error', () => undefined);
  await db.connect();
  const hubId = `bench-${randomBytes(4).toString('hex')}`;
  await db.query(`INSERT INTO hubs (id, name) VALUES ($1, 'bench')`, [hubId]);
  const frontend = (await db.query(`SELECT id, url_template FROM frontends WHERE public_name = 'public' AND hub_id IS NULL`)).rows[0];
  const share = async (envZId: string, port: number) => {
    const zId = randomBytes(6).toString('hex');
    await db.query(`INSERT INTO environments (env_z_id, hub_id, description, created_by, is_default) VALUES ($1, $2, $1, 'bench', false)`, [envZId, hubId]);
    await db.query(
      `INSERT INTO shares (z_id, hub_id, env_z_id, name, frontend_id, frontend_endpoint, target, status, created_by, protocol, tcp_port)
       VALUES ($1, $2, $3, 'bench', $4, $5, $6, 'ACTIVE', 'bench', 'tcp', $7)`,
      [zId, hubId, envZId, frontend.id, `tcp://${zId}.share.localhost:${port}`, `tcp://127.0.0.1:${sinkPort}`, port],
    );
    await db.query(`INSERT INTO share_frontends (share_z_id, frontend_id, position) VALUES ($1, $2, 0)`, [zId, frontend.id]);
  };
  const [directPort, agentPort] = [await freePort(), await freePort()];
  await share(`direct${randomBytes(3).toString('hex')}`, directPort);
  const agentEnv = `agent${randomBytes(3).toString('hex')}`;
  await share(agentEnv, agentPort);
  const edgeTlsPort = await freePort();
  const edge = startEdgeProcess(ws, services, {
    HUB_EDGE_HTTP_PORT: '0',
    HUB_EDGE_HTTPS_PORT: String(edgeTlsPort),
    HUB_EDGE_TLS_CERT_FILE: edgeCert.certFile,
    HUB_EDGE_TLS_KEY_FILE: edgeCert.keyFile,
    LOG_LEVEL: 'warn',
  });
  const dir = path.join(ws.work, 'agent');
  await benchAgent(db, { hubId, envZId: agentEnv, agent: agentCert, edgeCaPem: edgeCert.cert, edges: [`127.0.0.1:${edgeTlsPort}`], dir });
  await db.end();
  const agent = spawn(process.execPath, ['agent/bin/edgehub.js', 'agent', 'run', '--dir', dir], { stdio: ['ignore', 'ignore', 'inherit'] });
  ws.onCleanup(() => stopChild(agent));

  const chunk = Buffer.alloc(1 << 20, 7);
  /** Sends `mib` MiB to `port` and waits for the sink's count: MiB/s. */
  const send = (port: number, mib: number) =>
    new Promise<number>((resolve, reject) => {
      const started = performance.now();
      const socket = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
      let answer = '';
      let sent = 0;
      socket.on('data', (d) => (answer += d));
      socket.on('error', reject);
      socket.on('end', () => (Number(answer) === mib << 20 ? resolve(mib / ((performance.now() - started) / 1000)) : reject(new Error(`the sink counted ${answer} of ${mib << 20} bytes`))));
      const write = () => {
        while (sent < mib) {
          sent++;
          if (!socket.write(chunk)) return void socket.once('drain', write);
        }
        socket.end();
      };
      socket.once('connect', write);
    });
  for (let i = 0; ; i++) {
    try {
      await send(directPort, 1);
      await send(agentPort, 1);
      break;
    } catch {
      if (i > 100 || edge.exitCode !== null) throw new Error('the TCP shares did not carry');
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  const results: Record<'direct connection' | 'share, direct' | 'share, agent', number[]> = { 'direct connection': [], 'share, direct': [], 'share, agent': [] };
  const ports = { 'direct connection': sinkPort, 'share, direct': directPort, 'share, agent': agentPort };
  for (let round = 0; round < ROUNDS; round++) {
    const order = Object.keys(ports) as (keyof typeof ports)[];
    if (round % 2) order.reverse();
    for (const name of order) {
      const r = await send(ports[name], MIB);
      results[name].push(r);
      console.log(`  round ${round + 1} ${name.padEnd(18)} ${r.toFixed(0).padStart(6)} MiB/s`);
    }
  }
  const m = (name: keyof typeof results) => median(results[name]);
  console.log(`\nbench:tcp — ${MIB} MiB per transfer, ${ROUNDS} rounds (medians); load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  for (const name of Object.keys(results) as (keyof typeof results)[]) console.log(`${name.padEnd(18)} ${m(name).toFixed(0).padStart(6)} MiB/s`);
  console.log(`ratio  share, direct ${(m('share, direct') / m('direct connection')).toFixed(2)} of the direct connection (target >= 0.6); share, agent ${(m('share, agent') / m('direct connection')).toFixed(2)} (target >= 0.4)`);
} catch (err) {
  console.error(`bench:tcp failed: ${(err as Error).stack ?? err}`);
  process.exitCode = 1;
} finally {
  await ws.cleanUp();
}
process.exit(process.exitCode ?? 0);
