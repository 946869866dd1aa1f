/**
 * `npm run bench:ipsec`: the throughput of one TCP stream to an IPsec share, through the tunnel and without it, in
 * the same run (no target: a figure to watch). Both streams reach the same target the same way after the share's
 * listener (relay -> edge -> agent -> target); "through the tunnel" starts at a host of the customer's network
 * behind a real peer charon (IKEv2, ESP in user space on both ends), "without" starts inside the tunnel's own
 * namespace, next to the listener. The difference is what IPsec costs.
 *
 * Everything runs in this process except charon, the agent and the target: the service's records are written
 * straight into PostgreSQL and the strongSwan provider is called as the worker would. Prints the CPU each process
 * (this one with the edge, both charons, the agent, the target) spent per MiB each way. BENCH_MIB per stream
 * (default 64), BENCH_ROUNDS (default 3, alternating).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { strongswanSampleConfig } from '../api/presenters/ipsec.js';
import { tunnelNetns } from '../edge/ipsec/netns.js';
import { startEdge } from '../edge/server.js';
import { resetConfig } from '../shared/config.js';
import { closeDb, initDb } from '../shared/db.js';
import type { IpsecTunnel } from '../domain/models/IpsecTunnel.js';
import { StrongswanIpsecProvider } from '../shared/providers/ipsecStrongswan.js';
import { privateNetwork } from '../test/helpers/netns.js';
import { benchAgent } from './agentFixtures.js';
import { spawnPeerCharon } from '../test/helpers/peerCharon.js';
import { selfSignedCertificate } from '../test/helpers/selfSigned.js';
import { benchWorkspace, cpuMeter, describeCpu, freePort, median, schedCpuMs, startServices, stopChild } from './harness.js';

const run = promisify(execFile);
const MIB = Number(process.env.BENCH_MIB ?? 64);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WAN = `ehbw-${process.pid}`;
const PEER = `ehbp-${process.pid}`;
const ip = (...args: string[]) => run('ip', args);

const ws = benchWorkspace({ budgetMs: 10 * 60_000 });

/** One stream of MIB MiB from inside `ns` to host:port (the target answers the byte count); seconds taken. */
/** The charon processes this one started (the service's, through the strongSwan provider), but `except`. */
function serviceCharons(except: number | undefined): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === except) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'charon') continue;
      const parent = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1].split(' ')[1];
      if (Number(parent) === process.pid) pids.push(Number(entry));
    } catch {
      /* gone */
    }
  }
  return pids;
}

async function stream(ns: string, host: string, port: number, localAddress?: string): Promise<number> {
  const code = `const n=${MIB}*1048576,c=Buffer.alloc(1<<20,7);const t=process.hrtime.bigint();const s=require('net').connect({host:'${host}',port:${port}${localAddress ? `,localAddress:'${localAddress}'` : ''}},()=>{let left=n;const pump=()=>{while(left>0){left-=c.length;if(!s.write(c))return void s.once('drain',pump)}s.end()};pump()});let b='';s.on('data',d=>b+=d);s.on('end',()=>{if(Number(b)!==n){console.error('the target counted '+b);process.exit(1)}process.stdout.write(String(Number(process.hrtime.bigint()-t)/1e9))});`;
  const { stdout } = await run('ip', ['netns', 'exec', ns, process.execPath, '-e', code], { timeout: 300_000 });
  return Number(stdout);
}

try {
  const services = await startServices(ws);
  // the internet and the customer's site, as in test/edge/ipsec-strongswan.test.ts
  for (const ns of [WAN, PEER]) {
    await ip('netns', 'add', ns);
    ws.onCleanup(async () => {
      const pids = (await ip('netns', 'pids', ns).catch(() => ({ stdout: '' }))).stdout.split(/\s+/).filter(Boolean);
      for (const pid of pids) process.kill(Number(pid), 'SIGKILL');
      await ip('netns', 'del', ns);
    });
    await ip('-n', ns, 'link', 'set', 'lo', 'up');
  }
  await ip('-n', WAN, 'link', 'add', 'peer0', 'type', 'veth', 'peer', 'name', 'gw0');
  await ip('-n', WAN, 'link', 'set', 'gw0', 'netns', PEER);
  await ip('-n', WAN, 'addr', 'add', '203.0.113.1/24', 'dev', 'peer0');
  await ip('-n', WAN, 'link', 'set', 'peer0', 'up');
  await ip('-n', PEER, 'addr', 'add', '203.0.113.2/24', 'dev', 'gw0');
  await ip('-n', PEER, 'link', 'set', 'gw0', 'up');
  await ip('-n', PEER, 'route', 'add', 'default', 'via', '203.0.113.1');
  await ip('-n', PEER, 'addr', 'add', '192.168.77.1/32', 'dev', 'lo');

  // the service's edge (the IPsec host) in this process, with an operator certificate the agent trusts
  const dataDir = path.join(ws.work, 'data');
  const certs = path.join(ws.work, 'certs');
  mkdirSync(certs, { recursive: true });
  const edgeCert = selfSignedCertificate(certs, 'edge', '/CN=share.localhost', 'DNS:*.share.localhost');
  const agentCert = selfSignedCertificate(certs, 'agent', '/CN=bench agent');
  const httpsPort = await freePort();
  Object.assign(process.env, {
    DATABASE_URL: services.databaseUrl,
    REDIS_URL: services.redisUrl,
    HUB_DATA_DIR: dataDir,
    HUB_IPSEC_PROVIDER: 'strongswan',
    HUB_IPSEC_WAN_NETNS: WAN,
    HUB_PROVISION_DELAY_MS: '0',
    HUB_EDGE_TLS_CERT_FILE: edgeCert.certFile,
    HUB_EDGE_TLS_KEY_FILE: edgeCert.keyFile,
    LOG_LEVEL: 'warn',
  });
  resetConfig();
  await initDb();
  ws.onCleanup(() => closeDb());
  const edge = await startEdge({ httpPort: 0, httpsPort, host: '0.0.0.0' });
  ws.onCleanup(() => edge.stop(1000));
  for (let i = 0; !edge.ipsec?.isHost; i++) {
    if (i > 200) throw new Error('the edge did not take the IPsec host role');
    await sleep(50);
  }

  // a hub, an environment with an agent (certificate listed by fingerprint), the agent and a counting target
  const { db } = await import('../shared/db.js');
  const q = (sql: string, replacements: Record<string, unknown> = {}) => db().query(sql, { replacements });
  const hubId = `bench-${randomBytes(4).toString('hex')}`;
  const envZId = `env${randomBytes(3).toString('hex')}`;
  await q(`INSERT INTO hubs (id, name, features) VALUES (:hubId, 'bench', '{"ipsec": true}')`, { hubId });
  await q(`INSERT INTO environments (env_z_id, hub_id, description, created_by, is_default) VALUES (:envZId, :hubId, 'site', 'bench', false)`, {
    envZId,
    hubId,
  });
  const site = await privateNetwork('ehbs');
  ws.onCleanup(() => site.remove());
  const target = site.spawn(process.execPath, [
    '-e',
    `require('net').createServer({allowHalfOpen:true},s=>{let n=0;s.on('data',d=>n+=d.length);s.on('end',()=>s.end(String(n)))}).listen(9000,'127.0.0.1',()=>console.log('ready'))`,
  ]);
  await new Promise((resolve) => target.stdout!.once('data', resolve));
  const rows = new pg.Client({ connectionString: services.databaseUrl });
  await rows.connect();
  ws.onCleanup(() => rows.end());
  const dir = path.join(ws.work, 'agent');
  await benchAgent(rows, { hubId, envZId, agent: agentCert, edgeCaPem: edgeCert.cert, edges: [`${site.hostIp}:${httpsPort}`], dir });
  const agent = site.spawn(process.execPath, ['agent/bin/edgehub.js', 'agent', 'run', '--dir', dir]);
  ws.onCleanup(() => stopChild(agent));
  for (let i = 0; !edge.agents.connected(hubId, envZId).length; i++) {
    if (i > 400) throw new Error('the agent did not connect');
    await sleep(50);
  }

  // the tunnel and the share, provisioned by the strongSwan provider as the worker does
  const tunnelId = `bench-tunnel-${randomBytes(3).toString('hex')}`;
  await q(
    `INSERT INTO ipsec_tunnels (id, hub_id, name, status, peer_public_ip, peer_cidr, created_by) VALUES (:tunnelId, :hubId, 'bench', 'NEW', '203.0.113.2', '192.168.77.0/24', 'bench')`,
    { tunnelId, hubId },
  );
  const provider = new StrongswanIpsecProvider();
  const made = await provider.provisionTunnel({
    tunnelId,
    hubId,
    name: 'bench',
    locationId: null,
    peerPublicIp: '203.0.113.2',
    peerCidr: '192.168.77.0/24',
    nlbPrivateIp: null,
  });
  const shareId = `bench-share-${randomBytes(3).toString('hex')}`;
  await q(
    `INSERT INTO ipsec_shares (id, hub_id, name, ipsec_tunnel_id, env_z_id, target, ingress_port, status, created_by) VALUES (:shareId, :hubId, 'bench', :tunnelId, :envZId, '127.0.0.1:9000', 7000, 'DEPLOYED', 'bench')`,
    { shareId, hubId, tunnelId, envZId },
  );
  await provider.provisionShare({ shareId, hubId, name: 'bench', tunnelId, envZId, target: '127.0.0.1:9000', ingressPort: 7000 });

  // the peer: its own charon with the sample configuration, unchanged
  const peerDir = path.join(ws.work, 'peer');
  mkdirSync(peerDir);
  const { child: charon, vici } = spawnPeerCharon(PEER, peerDir);
  ws.onCleanup(() => stopChild(charon));
  for (let i = 0; ; i++) {
    if (
      await run('swanctl', ['--stats', '--uri', vici]).then(
        () => true,
        () => false,
      )
    )
      break;
    if (i > 200) throw new Error("the peer's charon did not start");
    await sleep(50);
  }
  const tunnel = { id: tunnelId, name: 'bench', peerPublicIp: '203.0.113.2', peerCidr: '192.168.77.0/24', ...made } as unknown as IpsecTunnel;
  writeFileSync(path.join(peerDir, 'edgehub.conf'), strongswanSampleConfig(tunnel, made.preSharedKey, '10.100.0.0/16'));
  await run('swanctl', ['--load-all', '--file', path.join(peerDir, 'edgehub.conf'), '--uri', vici]);
  for (let i = 0; !(await provider.tunnelStatus(tunnelId))?.tunnels[0]?.status.includes('UP'); i++) {
    if (i > 300) throw new Error('the tunnel did not come up');
    await sleep(100);
  }

  const through: number[] = [];
  const without: number[] = [];
  const meter = cpuMeter({
    'service (edge, relay)': () => schedCpuMs(process.pid),
    'service charon': () => serviceCharons(charon.pid).reduce((sum, pid) => sum + schedCpuMs(pid), 0),
    'peer charon': () => schedCpuMs(charon.pid),
    agent: () => schedCpuMs(agent.pid),
    target: () => schedCpuMs(target.pid),
  });
  const cpu: Record<'through' | 'without', Record<string, number>[]> = { through: [], without: [] };
  const ns = tunnelNetns(tunnelId);
  await stream(PEER, made.nlbPrivateIp, 7000, '192.168.77.1'); // warm-up (JIT, agent stream windows)
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 ? (['without', 'through'] as const) : (['through', 'without'] as const);
    for (const which of order) {
      const m = meter.start();
      if (which === 'through') through.push(await stream(PEER, made.nlbPrivateIp, 7000, '192.168.77.1'));
      else without.push(await stream(ns, made.nlbPrivateIp, 7000));
      cpu[which].push(m.per(MIB));
    }
  }
  const rate = (seconds: number[]) => MIB / median(seconds);
  console.log(`\nbench:ipsec — one TCP stream of ${MIB} MiB to an IPsec share (listener -> edge -> agent -> target), ${ROUNDS} rounds each, medians`);
  console.log(`through the tunnel (peer charon <-> service charon, ESP in user space): ${rate(through).toFixed(1)} MiB/s`);
  console.log(`without the tunnel (from inside the tunnel's namespace):               ${rate(without).toFixed(1)} MiB/s`);
  console.log(`ratio ${(rate(through) / rate(without)).toFixed(2)} (no target: a figure to watch)`);
  console.log(`through: ${describeCpu(cpu.through, 'MiB')}`);
  console.log(`without: ${describeCpu(cpu.without, 'MiB')}`);
  console.log(`rounds (s): through ${through.map((s) => s.toFixed(2)).join(', ')}; without ${without.map((s) => s.toFixed(2)).join(', ')}`);
} catch (err) {
  console.error(`bench:ipsec failed: ${(err as Error).stack ?? err}`);
  process.exitCode = 1;
} finally {
  await ws.cleanUp();
}
process.exit(process.exitCode ?? 0);
