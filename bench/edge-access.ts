/**
 * `npm run bench:edge-access`: what mutual TLS costs on the edge's hot path. One edge process (as the Procfile runs
 * it), one node:http backend, two ACTIVE shares of one hub over the edge's TLS listener: a plain one (the baseline)
 * and a `mutualTls` one whose client presents a certificate listed in the hub (the registry's per-request check).
 * The same autocannon client (keep-alive connections, so the handshake is not what is measured) loads both,
 * alternating rounds. Prints requests/s and p99 of both and the ratios, and the CPU the edge and the backend spent
 * per request (from /proc).
 *
 * BENCH_CONNECTIONS (default 50), BENCH_SECONDS per round (default 8), BENCH_ROUNDS (default 3).
 */
import { randomBytes, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { selfSignedCertificate } from '../test/helpers/selfSigned.js';
import {
  benchWorkspace,
  cpuMeter,
  describeCpu,
  freePort,
  median,
  schedCpuMs,
  startEdgeProcess,
  startServices,
  startPlainBackend,
  stopChild,
  treeCpuMs,
} from './harness.js';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const ws = benchWorkspace({ budgetMs: 10 * 60_000 });
try {
  const services = await startServices(ws);
  const file = (name: string) => path.join(ws.work, name);
  // the edge's certificate for the standard frontend (operator files) and a client certificate to upload
  selfSignedCertificate(ws.work, 'edge', '/CN=share.localhost', 'DNS:*.share.localhost');
  selfSignedCertificate(ws.work, 'client', '/CN=bench-client');
  const clientPem = readFileSync(file('client.crt'), 'utf8');
  const client = new X509Certificate(clientPem);

  const { port: backendPort, child: backend } = await startPlainBackend(ws);

  // the hub, its shares and its uploaded client certificate, written directly (the bench measures the data plane)
  const db = new pg.Client({ connectionString: services.databaseUrl });
  await db.connect();
  const hubId = `bench-${randomBytes(4).toString('hex')}`;
  const env = `e${randomBytes(5).toString('hex')}`;
  await db.query(`INSERT INTO hubs (id, name) VALUES ($1, 'bench')`, [hubId]);
  await db.query(`INSERT INTO environments (env_z_id, hub_id, description, created_by, is_default) VALUES ($1, $2, 'default', 'bench', true)`, [env, hubId]);
  const frontend = (await db.query(`SELECT id, url_template FROM frontends WHERE public_name = 'public' AND hub_id IS NULL`)).rows[0];
  const share = async (mutualTls: boolean) => {
    const zId = randomBytes(6).toString('hex');
    await db.query(
      `INSERT INTO shares (z_id, hub_id, env_z_id, name, frontend_id, frontend_endpoint, target, status, created_by, mutual_tls)
       VALUES ($1, $2, $3, 'bench', $4, $5, $6, 'ACTIVE', 'bench', $7)`,
      [zId, hubId, env, frontend.id, frontend.url_template.replace('{token}', zId), `http://127.0.0.1:${backendPort}`, mutualTls],
    );
    await db.query(`INSERT INTO share_frontends (share_z_id, frontend_id, position) VALUES ($1, $2, 0)`, [zId, frontend.id]);
    return `${zId}.share.localhost`;
  };
  const plainHost = await share(false);
  const mtlsHost = await share(true);
  await db.query(
    `INSERT INTO client_certificates (id, hub_id, name, source, certificate_pem, fingerprint_sha256, subject, serial_number, not_before, not_after, created_by)
     VALUES ($1, $2, 'bench-client', 'UPLOAD', $3, $4, 'CN=bench-client', $5, $6, $7, 'bench')`,
    [
      `c${randomBytes(6).toString('hex')}`,
      hubId,
      clientPem,
      client.fingerprint256.replaceAll(':', '').toLowerCase(),
      client.serialNumber.toLowerCase(),
      new Date(client.validFrom),
      new Date(client.validTo),
    ],
  );
  await db.end();

  const edgePort = await freePort();
  const edge = startEdgeProcess(ws, services, {
    HUB_EDGE_HTTP_PORT: '0',
    HUB_EDGE_HTTPS_PORT: String(edgePort),
    HUB_EDGE_TLS_CERT_FILE: file('edge.crt'),
    HUB_EDGE_TLS_KEY_FILE: file('edge.key'),
    LOG_LEVEL: 'warn',
  });

  const tlsOptions = { cert: clientPem, key: readFileSync(file('client.key'), 'utf8'), rejectUnauthorized: false };
  const load = (host: string, seconds: number) =>
    new Promise<autocannon.Result>((resolve, reject) =>
      autocannon(
        {
          url: `https://127.0.0.1:${edgePort}`,
          connections: CONNECTIONS,
          duration: seconds,
          headers: { host },
          servername: host,
          tlsOptions,
        } as autocannon.Options,
        (err, result) => (err ? reject(err) : resolve(result)),
      ),
    );
  for (let i = 0; ; i++) {
    const r = await load(mtlsHost, 1).catch(() => undefined);
    if (r && r.non2xx === 0 && r.errors === 0 && r['2xx'] > 0) break;
    if (i > 60 || edge.exitCode !== null) throw new Error('the edge did not admit the client certificate');
    await new Promise((res) => setTimeout(res, 250));
  }
  await load(plainHost, 2);
  const results: Record<'plain' | 'mtls', autocannon.Result[]> = { plain: [], mtls: [] };
  const meter = cpuMeter({ edge: () => treeCpuMs(edge.pid).total, backend: () => schedCpuMs(backend.pid) });
  const cpu: Record<'plain' | 'mtls', Record<string, number>[]> = { plain: [], mtls: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const order: ['plain' | 'mtls', string][] =
      round % 2
        ? [
            ['mtls', mtlsHost],
            ['plain', plainHost],
          ]
        : [
            ['plain', plainHost],
            ['mtls', mtlsHost],
          ];
    for (const [name, host] of order) {
      const m = meter.start();
      const r = await load(host, SECONDS);
      if (r.non2xx || r.errors) throw new Error(`${name}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
      results[name].push(r);
      cpu[name].push(m.per(r.requests.total));
    }
  }
  await stopChild(edge);
  const rps = (name: 'plain' | 'mtls') => median(results[name].map((r) => r.requests.average));
  const p99 = (name: 'plain' | 'mtls') => median(results[name].map((r) => r.latency.p99));
  const line = (name: string, r: number, p: number, c: Record<string, number>[]) =>
    `${name.padEnd(22)} ${r.toFixed(0).padStart(8)} req/s   p99 ${p.toFixed(1).padStart(6)} ms   ${describeCpu(c, 'request')}`;
  console.log(`\nbench:edge-access — ${CONNECTIONS} keep-alive TLS connections, ${ROUNDS} x ${SECONDS} s per share (medians), 128-byte answers`);
  console.log(line('TLS share (baseline)', rps('plain'), p99('plain'), cpu.plain));
  console.log(line('mutual-TLS share', rps('mtls'), p99('mtls'), cpu.mtls));
  console.log(
    `ratio  ${(rps('mtls') / rps('plain')).toFixed(2)} of the baseline's requests/s   p99 ${(p99('mtls') / p99('plain')).toFixed(2)}x the baseline's`,
  );
  console.log(
    `rounds: plain ${results.plain.map((r) => r.requests.average.toFixed(0)).join(', ')}; mtls ${results.mtls.map((r) => r.requests.average.toFixed(0)).join(', ')}`,
  );
} finally {
  await ws.cleanUp();
}
process.exit(0);
