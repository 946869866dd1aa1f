/**
 * `npm run bench:tcp`: throughput of TCP shares against the direct connection, in one run. A sink process reads
 * everything sent to it and answers the byte count at the end; the same client sends BENCH_MIB MiB (default 512)
 * (a) straight to the sink, (b) through a TCP share the edge carries directly, (c) through a TCP share of an
 * environment served by an agent (`edgehub agent run`, a process of its own), (d) through nginx's `stream` proxy
 * (`proxy_pass` to the sink, one worker): what a user-space proxy written in C reaches on the same machine. Rounds
 * alternate; medians are compared against the direct connection and against nginx's stream proxy, the proxy of the
 * same kind a user compares with (targets: direct share >= 0.9 of nginx stream, agent share >= 0.5), and (e) through
 * two nginx with TLS between them (`proxy_ssl` to an `ssl` listener): the agent path's shape in C, the reference for
 * what a TLS hop between two proxies costs on this machine. Prints the CPU the edge, the agent and nginx spent per MiB
 * carried (from the scheduler's clock: the figure that moves least on a shared machine) and the load average.
 *
 * nginx's stream module is a package of its own on Debian (libnginx-mod-stream): installed with apt-get when
 * missing and we are root.
 *
 * BENCH_BASE_DIR=<checkout>: the same two shares again, served by an edge and an agent of that checkout (compiled
 * and started as this one is; its own database), as two more columns: a same-run A/B of a change. BENCH_BASE_ENV
 * (JSON) goes on top of that edge's environment: `BENCH_BASE_DIR=. BENCH_BASE_ENV='{"BENCH_NODE_FLAGS":"..."}'` is
 * an A/B of a node flag.
 *
 * BENCH_DIRECTION=download: the target sends the MiB and the client reads them (the edge then reads from the target's
 * socket, which it connected itself, and writes to the client's).
 *
 * BENCH_AGENT_NODE_FLAGS: node flags for the agents (`--trace-gc` prints to stdout with BENCH_STDOUT=1).
 *
 * BENCH_MIB (default 512), BENCH_ROUNDS (default 5), BENCH_ONLY (columns to measure besides the direct connection,
 * comma-separated among `edge`, `agent`, `nginx`, `tunnel`: to profile or strace one path alone), BENCH_PROFILE=<dir> (V8 CPU
 * profiles of the edge and the agent), BENCH_PIDS=<file> (writes the edge's and the agent's process ids there, for
 * `strace -p` or `perf -p`, then waits BENCH_PIDS_WAIT_MS, default 0, before measuring).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { benchAgent } from './agentFixtures.js';
import { selfSignedCertificate } from '../test/helpers/selfSigned.js';
import { ensureCommands } from '../scripts/services/index.js';
import { type BenchWorkspace, benchWorkspace, freePort, median, migratedDatabase, startEdgeProcess, startServices, stopChild, treeCpuMs } from './harness.js';

const MIB = Number(process.env.BENCH_MIB ?? 512);
/** Five rounds: a median that one noisy round (the machine's other tenants) or the first, still warming, cannot move. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
/** BENCH_DIRECTION=download: the target sends and the client reads (default: the client sends, the target reads). */
const DOWNLOAD = process.env.BENCH_DIRECTION === 'download';

// the target: counts what it is sent and answers the count once the client ends; a connection that starts with
// `SEND <n>` is sent n MiB instead (a download), then ended
const SINK = `
const net = require('node:net');
const mib = Buffer.alloc(1 << 20, 9);
const server = net.createServer({ allowHalfOpen: true }, (s) => {
  let n = 0;
  let sending = false;
  s.on('error', () => {});
  s.on('data', (d) => {
    if (n === 0 && !sending && d[0] === 0x53) {
      sending = true;
      let left = parseInt(d.toString('latin1').slice(5), 10);
      const write = () => {
        while (left > 0) {
          left--;
          if (!s.write(mib)) return void s.once('drain', write);
        }
        s.end();
      };
      return write();
    }
    if (!sending) n += d.length;
  });
  s.on('end', () => { if (!sending) s.end(String(n)); });
});
server.listen(Number(process.argv[1]), '127.0.0.1', () => process.stdout.write('ready\\n'));
`;

const STREAM_MODULE = '/usr/lib/nginx/modules/ngx_stream_module.so';

/** nginx with its stream module loaded from Debian's package (installed when missing and we are root). */
function ensureNginxStream(): void {
  ensureCommands([{ command: 'nginx', pkg: 'nginx', hint: 'Install it: `sudo apt-get install nginx`.' }]);
  if (existsSync(STREAM_MODULE)) return;
  if (process.getuid?.() === 0) {
    console.error(`${STREAM_MODULE} not found: installing libnginx-mod-stream (apt-get) ...`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
    spawnSync('apt-get', ['install', '-y', '-qq', 'libnginx-mod-stream'], { stdio: 'inherit', env });
  }
  if (!existsSync(STREAM_MODULE)) throw new Error(`nginx's stream module (${STREAM_MODULE}) is missing: \`sudo apt-get install libnginx-mod-stream\``);
}

/** An nginx process (one worker) with its stream module and this `stream` block, in a directory of its own. */
function startNginx(ws: BenchWorkspace, name: string, stream: string): ChildProcess {
  const dir = path.join(ws.work, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, 'nginx.conf'),
    `load_module ${STREAM_MODULE};
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
stream {
${stream}
}
`,
  );
  const child = spawn('nginx', ['-c', path.join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: 'inherit' });
  ws.onCleanup(() => stopChild(child));
  return child;
}

/** nginx's `stream` proxy on a free port, `proxy_pass` to 127.0.0.1:`sinkPort`. */
async function startNginxStream(ws: BenchWorkspace, sinkPort: number): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  // the client ends its sending and then reads the count: a FIN passed on as a FIN (`proxy_half_close`), as the edge does
  const child = startNginx(ws, 'nginx-stream', `  server { listen 127.0.0.1:${port}; proxy_pass 127.0.0.1:${sinkPort}; proxy_half_close on; }`);
  return { port, child };
}

/**
 * The same shape as a TCP share through an agent, in C: one nginx takes the client's connection and carries it over
 * TLS (`proxy_ssl`) to a second nginx, which ends the TLS and connects to the sink. Four processes on the machine's
 * cores, each byte encrypted once and decrypted once, as edge -> agent does (without HTTP/2's framing).
 */
async function startNginxTlsTunnel(ws: BenchWorkspace, sinkPort: number, cert: { certFile: string; keyFile: string }) {
  const [port, innerPort] = [await freePort(), await freePort()];
  const inner = startNginx(
    ws,
    'nginx-tls-inner',
    `  server { listen 127.0.0.1:${innerPort} ssl; ssl_protocols TLSv1.3; ssl_certificate ${cert.certFile}; ssl_certificate_key ${cert.keyFile}; proxy_pass 127.0.0.1:${sinkPort}; proxy_half_close on; }`,
  );
  const outer = startNginx(
    ws,
    'nginx-tls-outer',
    `  server { listen 127.0.0.1:${port}; proxy_pass 127.0.0.1:${innerPort}; proxy_ssl on; proxy_ssl_protocols TLSv1.3; proxy_half_close on; }`,
  );
  return { port, outer, inner };
}

ensureNginxStream();
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
  /**
   * One side: a hub with a TCP share the edge carries itself and one of an agent-served environment, on the
   * database at `databaseUrl`, an edge process (started as npm start starts it, `edgeExtra` on top of its environment)
   * and an agent process from the checkout at `checkout`.
   */
  const side = async (checkout: string, databaseUrl: string, edgeExtra: NodeJS.ProcessEnv = {}) => {
    const db = new pg.Client({ connectionString: databaseUrl });
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
    const edgeEnv = {
      HUB_EDGE_HTTP_PORT: '0',
      HUB_EDGE_HTTPS_PORT: String(edgeTlsPort),
      HUB_EDGE_TLS_CERT_FILE: edgeCert.certFile,
      HUB_EDGE_TLS_KEY_FILE: edgeCert.keyFile,
      LOG_LEVEL: 'warn',
    };
    const edge = startEdgeProcess(ws, { ...services, databaseUrl }, { ...edgeEnv, ...edgeExtra }, checkout);
    const dir = path.join(ws.work, `agent-${randomBytes(3).toString('hex')}`);
    await benchAgent(db, { hubId, envZId: agentEnv, agent: agentCert, edgeCaPem: edgeCert.cert, edges: [`127.0.0.1:${edgeTlsPort}`], dir });
    await db.end();
    const agentFlags = (process.env.BENCH_AGENT_NODE_FLAGS ?? '').split(' ').filter(Boolean);
    const agent = spawn(process.execPath, [...profile, ...agentFlags, path.join(checkout, 'agent/bin/edgehub.js'), 'agent', 'run', '--dir', dir], {
      stdio: ['ignore', process.env.BENCH_STDOUT ? 'inherit' : 'ignore', 'inherit'],
    });
    ws.onCleanup(() => stopChild(agent));
    return { edge, agent, directPort, agentPort };
  };
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  const { edge, agent, directPort, agentPort } = await side('.', services.databaseUrl);
  // BENCH_BASE_DIR: the same shares served by an edge and an agent of another checkout, on a database of its own
  const baseDir = process.env.BENCH_BASE_DIR;
  const base = baseDir
    ? await side(baseDir, await migratedDatabase(services, 'bench_base', baseDir), {
        // its own data folder, and BENCH_BASE_ENV on top
        HUB_DATA_DIR: path.join(ws.work, 'data-base'),
        ...JSON.parse(process.env.BENCH_BASE_ENV ?? '{}'),
      })
    : undefined;
  const nginx = await startNginxStream(ws, sinkPort);
  const tunnel = await startNginxTlsTunnel(ws, sinkPort, edgeCert);

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
      socket.on('end', () =>
        Number(answer) === mib * 2 ** 20
          ? resolve(mib / ((performance.now() - started) / 1000))
          : reject(new Error(`the sink counted ${answer} of ${mib * 2 ** 20} bytes`)),
      );
      const write = () => {
        while (sent < mib) {
          sent++;
          if (!socket.write(chunk)) return void socket.once('drain', write);
        }
        socket.end();
      };
      socket.once('connect', write);
    });
  /** Asks the target at the far end of `port` for `mib` MiB and reads them to the end: MiB/s. */
  const fetchMib = (port: number, mib: number) =>
    new Promise<number>((resolve, reject) => {
      const started = performance.now();
      const socket = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
      let received = 0;
      socket.on('data', (d: Buffer) => (received += d.length));
      socket.on('error', reject);
      socket.on('end', () =>
        received === mib * 2 ** 20
          ? resolve(mib / ((performance.now() - started) / 1000))
          : reject(new Error(`received ${received} of ${mib * 2 ** 20} bytes`)),
      );
      socket.once('connect', () => socket.end(`SEND ${mib}\n`));
    });
  const transfer = DOWNLOAD ? fetchMib : send;
  for (let i = 0; ; i++) {
    try {
      await send(directPort, 1);
      await send(agentPort, 1);
      await send(nginx.port, 1);
      await send(tunnel.port, 1);
      if (base) await send(base.directPort, 1);
      if (base) await send(base.agentPort, 1);
      break;
    } catch (err) {
      if (i > 100 || edge.exitCode !== null || (base && base.edge.exitCode !== null))
        throw new Error(`the TCP shares did not carry (${(err as Error).message})`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  type Column = 'direct connection' | 'share, direct' | 'share, agent' | 'nginx stream' | 'nginx TLS tunnel' | 'base share, direct' | 'base share, agent';
  const ports: Partial<Record<Column, number>> = {
    'direct connection': sinkPort,
    'share, direct': directPort,
    'share, agent': agentPort,
    'nginx stream': nginx.port,
    'nginx TLS tunnel': tunnel.port,
  };
  if (base) Object.assign(ports, { 'base share, direct': base.directPort, 'base share, agent': base.agentPort });
  /** The processes whose CPU a column spends besides the client's and the sink's. */
  const carriers: Record<Column, [string, ChildProcess][]> = {
    'direct connection': [],
    'share, direct': [['edge', edge]],
    'share, agent': [
      ['edge', edge],
      ['agent', agent],
    ],
    'nginx stream': [['nginx', nginx.child]],
    'nginx TLS tunnel': [
      ['nginx outer', tunnel.outer],
      ['nginx inner', tunnel.inner],
    ],
    'base share, direct': base ? [['edge', base.edge]] : [],
    'base share, agent': base
      ? [
          ['edge', base.edge],
          ['agent', base.agent],
        ]
      : [],
  };
  const only = process.env.BENCH_ONLY?.split(',').map((x) => x.trim());
  const short: Record<Column, string> = {
    'direct connection': 'direct',
    'share, direct': 'edge',
    'share, agent': 'agent',
    'nginx stream': 'nginx',
    'nginx TLS tunnel': 'tunnel',
    'base share, direct': 'edge',
    'base share, agent': 'agent',
  };
  if (only)
    for (const name of Object.keys(ports) as Column[])
      if (name !== 'direct connection' && !only.includes(short[name])) delete (ports as Partial<typeof ports>)[name];
  if (process.env.BENCH_PIDS) {
    writeFileSync(process.env.BENCH_PIDS, `edge ${edge.pid}\nagent ${agent.pid}\nnginx ${nginx.child.pid}\n`);
    await new Promise((r) => setTimeout(r, Number(process.env.BENCH_PIDS_WAIT_MS ?? 0)));
  }
  const results = Object.fromEntries(Object.keys(ports).map((k) => [k, [] as number[]])) as Record<Column, number[]>;
  const cpu = Object.fromEntries(Object.keys(ports).map((k) => [k, {} as Record<string, number[]>])) as Record<Column, Record<string, number[]>>;
  const load = () =>
    os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ');
  // what each carrier spends doing nothing (pings, presence, reconnects): it is in every CPU-per-MiB figure below
  const idle: [string, ChildProcess][] = [
    ['edge', edge],
    ['agent', agent],
    ['nginx', nginx.child],
    ['nginx TLS tunnel, outer', tunnel.outer],
    ['nginx TLS tunnel, inner', tunnel.inner],
    ...(base
      ? ([
          ['base edge', base.edge],
          ['base agent', base.agent],
        ] as [string, ChildProcess][])
      : []),
  ];
  const idleBefore = idle.map(([, p]) => treeCpuMs(p.pid).total);
  await new Promise((r) => setTimeout(r, 3000));
  console.log(`idle CPU over 3 s: ${idle.map(([who, p], i) => `${who} ${((treeCpuMs(p.pid).total - idleBefore[i]!) / 3).toFixed(1)} ms/s`).join(', ')}`);
  console.log(`load average at the start ${load()}`);
  for (let round = 0; round < ROUNDS; round++) {
    const order = Object.keys(ports) as Column[];
    if (round % 2) order.reverse();
    for (const name of order) {
      const before = carriers[name].map(([, p]) => treeCpuMs(p.pid).total);
      const r = await transfer(ports[name]!, MIB);
      const used = carriers[name].map(([who, p], i) => [who, (treeCpuMs(p.pid).total - before[i]!) / MIB] as const);
      for (const [who, ms] of used) (cpu[name][who] ??= []).push(ms);
      results[name].push(r);
      console.log(
        `  round ${round + 1} ${name.padEnd(18)} ${r.toFixed(0).padStart(6)} MiB/s  ${used.map(([who, ms]) => `${who} ${ms.toFixed(2)} ms CPU/MiB`).join(', ')}`,
      );
    }
  }
  const m = (name: Column) => (results[name]?.length ? median(results[name]) : NaN);
  console.log(
    `\nbench:tcp — ${MIB} MiB per transfer (${DOWNLOAD ? 'download: the target sends' : 'upload: the client sends'}), ${ROUNDS} rounds (medians); load average ${load()}`,
  );
  for (const name of Object.keys(ports) as Column[]) {
    const spent = Object.entries(cpu[name])
      .map(([who, xs]) => `${who} ${median(xs).toFixed(2)} ms CPU/MiB`)
      .join(', ');
    console.log(`${name.padEnd(18)} ${m(name).toFixed(0).padStart(6)} MiB/s  ${(m(name) / m('direct connection')).toFixed(2)}  ${spent}`);
  }
  console.log(
    `against the direct connection: share, direct ${(m('share, direct') / m('direct connection')).toFixed(2)}; share, agent ${(m('share, agent') / m('direct connection')).toFixed(2)}; nginx stream ${(m('nginx stream') / m('direct connection')).toFixed(2)}`,
  );
  // what a user compares a TCP tunnel with is a proxy of the same kind on the same machine: the floors are against nginx
  console.log(
    `ratio  share, direct ${(m('share, direct') / m('nginx stream')).toFixed(2)} of nginx stream (target >= 0.9); share, agent ${(m('share, agent') / m('nginx stream')).toFixed(2)} (target >= 0.5)`,
  );
  // the first transfer after start, the edge and the agent still warming (V8 compiles their hot paths during it)
  const first = (name: Column) => results[name]?.[0] ?? NaN;
  console.log(
    `first round: share, direct ${(first('share, direct') / first('nginx stream')).toFixed(2)} of nginx stream; share, agent ${(first('share, agent') / first('nginx stream')).toFixed(2)}`,
  );
  // the agent path's shape in C: where a TLS hop between two proxies puts the ceiling on this machine
  console.log(
    `same shape: nginx TLS tunnel ${(m('nginx TLS tunnel') / m('nginx stream')).toFixed(2)} of nginx stream; share, agent ${(m('share, agent') / m('nginx TLS tunnel')).toFixed(2)} of the nginx TLS tunnel`,
  );
} catch (err) {
  console.error(`bench:tcp failed: ${(err as Error).stack ?? err}`);
  process.exitCode = 1;
} finally {
  await ws.cleanUp();
}
process.exit(process.exitCode ?? 0);
