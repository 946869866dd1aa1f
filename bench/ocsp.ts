/**
 * The OCSP responder (domain/commands/ocspResponder.ts) against a static answer, and how soon a revocation shows.
 *
 *   npm run bench:ocsp        (BENCH_DURATION seconds per measurement, default 5; BENCH_ROUNDS, default 2;
 *                              BENCH_CONNECTIONS, default 20)
 *
 * One web process (bench/ocspServer.ts: the API plus a static route in the same app) and one worker, on embedded
 * PostgreSQL and redis-server. A hub's CA issues a certificate; openssl makes the OCSP request for it (no nonce, as
 * relying parties that cache send it). Per round, alternating: autocannon POSTs that request to
 * `/pki/{hub}/ocsp` (answered `good` from the responder's cache: no signature per request), then the same body to
 * the static route, which answers 200 with as many bytes as the OCSP answer. The unauthenticated-route rate limit is
 * off for both (HUB_UNAUTH_RATE_LIMIT=0): it would cut the run short, and it costs both sides alike.
 * Printed: requests/s of each per round, and `ratio X of a static answer's requests/s` (the median of the rounds;
 * floor 0.5), and the CPU the web process, PostgreSQL and Redis spent per request of each.
 *
 * Then BENCH_REVOCATIONS (default 5) certificates are revoked one at a time (DELETE ?reason=keyCompromise), each timed
 * from the request to its serial in the CRL (`GET /pki/{hub}/crl`, polled every 10 ms) and to `revoked` in the OCSP
 * answer (polled likewise). Printed: the slowest and the median of each (floor 2 s).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseOcspRequest } from '../shared/pki/ocsp.js';
import { deviceCsr } from './deviceCsr.js';
import {
  benchWorkspace,
  cpuMeter,
  cpuMs,
  describeCpu,
  freePort,
  jsonClient,
  loadTest,
  median,
  postgresCpuMs,
  schedCpuMs,
  startProcess,
  startServices,
  waitUntilHealthy,
  webEnv,
} from './harness.js';

const DURATION = Number(process.env.BENCH_DURATION || 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS || 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS || 20);
const REVOCATIONS = Number(process.env.BENCH_REVOCATIONS || 5);

const ws = benchWorkspace();
try {
  const services = await startServices(ws);
  const adminToken = randomBytes(24).toString('base64url');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = webEnv(ws, services, port, adminToken, { HUB_UNAUTH_RATE_LIMIT: '0', PUBLIC_BASE_URL: base, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' });
  const web = startProcess(ws, 'bench/ocspServer.ts', env);
  startProcess(ws, 'workers/index.ts', { ...env, HUB_PROCESS: 'worker' });
  await waitUntilHealthy(base, web);

  const admin = jsonClient(base, `Bearer ${adminToken}`);
  const hub = await admin('POST', '/admin/v1/hubs', { name: 'bench-ocsp', features: { ipsec: false } });
  const key = await admin('POST', `/admin/v1/hubs/${hub.json.id}/api-keys`, { name: 'bench' });
  const api = jsonClient(base, `Bearer ${key.json.token}`);
  const h = `/hub/${hub.json.id}`;

  /** A certificate of the hub's CA, and a DER OCSP request for it (openssl's, without a nonce). */
  async function certificate(name: string): Promise<{ id: string; request: Buffer; certId: Buffer; serial: Buffer }> {
    const created = await api('POST', `${h}/client-certificates`, { name, value: await deviceCsr(`${name}.bench`) });
    if (created.status !== 201) throw new Error(`issuing failed: ${created.status} ${JSON.stringify(created.json)}`);
    const got = await api('GET', `${h}/client-certificates/${created.json.id}`);
    const leaf = path.join(ws.work, `${name}.pem`);
    const issuing = path.join(ws.work, `${name}-issuing.pem`);
    const out = path.join(ws.work, `${name}.req`);
    writeFileSync(leaf, got.json.value);
    writeFileSync(issuing, (got.json.chain as string).split(/(?<=-----END CERTIFICATE-----\n)/)[0]);
    execFileSync('openssl', ['ocsp', '-issuer', issuing, '-cert', leaf, '-no_nonce', '-reqout', out]);
    const request = readFileSync(out);
    return { id: created.json.id, request, certId: parseOcspRequest(request).certIds[0].raw, serial: Buffer.from(got.json.serialNumber, 'hex') };
  }

  const post = async (url: string, body: Buffer) => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/ocsp-request' }, body: new Uint8Array(body) });
    return Buffer.from(await res.arrayBuffer());
  };
  /** The status tag after the CertID in an answer: 0x80 good, 0xa1 revoked, 0x82 unknown. */
  const statusTag = (answer: Buffer, certId: Buffer) => {
    const at = answer.indexOf(certId);
    return at < 0 ? -1 : answer[at + certId.length];
  };

  const known = await certificate('known');
  const ocspUrl = `${base}/pki/${hub.json.id}/ocsp`;
  let answer = Buffer.alloc(0);
  for (let i = 0; i < 50 && statusTag(answer, known.certId) !== 0x80; i++) answer = await post(ocspUrl, known.request);
  if (statusTag(answer, known.certId) !== 0x80) throw new Error('the responder does not answer good for the known certificate');
  for (let i = 0; i < 20; i++) await post(ocspUrl, known.request);
  const staticUrl = `${base}/pki/bench-static/ocsp?bytes=${answer.length}`;
  console.log(`OCSP answer: ${answer.length} bytes; ${CONNECTIONS} connections, ${DURATION} s per measurement, ${ROUNDS} rounds`);

  const run = (url: string) =>
    loadTest({
      url,
      method: 'POST',
      headers: { 'content-type': 'application/ocsp-request' },
      body: known.request,
      connections: CONNECTIONS,
      duration: DURATION,
    });
  await run(staticUrl);
  await run(ocspUrl); // warm both
  const ratios: number[] = [];
  const meter = cpuMeter({
    web: () => schedCpuMs(web.pid),
    postgres: () => postgresCpuMs(services.postgresDataDir),
    redis: () => cpuMs(services.redisPid),
  });
  const cpu: Record<'ocsp' | 'static', Record<string, number>[]> = { ocsp: [], static: [] };
  for (let round = 1; round <= ROUNDS; round++) {
    let m = meter.start();
    const fixed = await run(staticUrl);
    cpu.static.push(m.per(fixed.requests.total));
    m = meter.start();
    const ocsp = await run(ocspUrl);
    cpu.ocsp.push(m.per(ocsp.requests.total));
    const bad = ocsp.non2xx + fixed.non2xx + ocsp.errors + fixed.errors;
    ratios.push(ocsp.rps / fixed.rps);
    console.log(
      `round ${round}: OCSP ${ocsp.rps.toFixed(0)}/s (p99 ${ocsp.latency.p99} ms), static ${fixed.rps.toFixed(0)}/s (p99 ${fixed.latency.p99} ms), ratio ${(ocsp.rps / fixed.rps).toFixed(3)}${bad ? `, ${bad} non-2xx or errors` : ''}`,
    );
  }
  console.log(`ratio ${median(ratios).toFixed(3)} of a static answer's requests/s (OCSP for a known serial, same process, same size; floor 0.5)`);
  console.log(`OCSP ${describeCpu(cpu.ocsp, 'request')}; static ${describeCpu(cpu.static, 'request')}`);

  const crlUrl = `${base}/pki/${hub.json.id}/crl`;
  const toCrl: number[] = [];
  const toOcsp: number[] = [];
  for (let i = 0; i < REVOCATIONS; i++) {
    const cert = await certificate(`revoked-${i}`);
    if (statusTag(await post(ocspUrl, cert.request), cert.certId) !== 0x80) throw new Error('a fresh certificate is not good');
    const started = performance.now();
    const deleted = await api('DELETE', `${h}/client-certificates/${cert.id}?reason=keyCompromise`);
    if (deleted.status !== 200) throw new Error(`revoking failed: ${deleted.status}`);
    let crlAt = 0;
    let ocspAt = 0;
    while ((!crlAt || !ocspAt) && performance.now() - started < 30_000) {
      if (!crlAt && Buffer.from(await (await fetch(crlUrl)).arrayBuffer()).includes(cert.serial)) crlAt = performance.now() - started;
      if (!ocspAt && statusTag(await post(ocspUrl, cert.request), cert.certId) === 0xa1) ocspAt = performance.now() - started;
      await new Promise((r) => setTimeout(r, 10));
    }
    if (!crlAt || !ocspAt) throw new Error('a revocation did not show within 30 s');
    toCrl.push(crlAt);
    toOcsp.push(ocspAt);
  }
  const ms = (xs: number[]) => `median ${median(xs).toFixed(0)} ms, slowest ${Math.max(...xs).toFixed(0)} ms`;
  console.log(`revocation -> in the CRL: ${ms(toCrl)}; -> revoked in the OCSP answer: ${ms(toOcsp)} (${REVOCATIONS} revocations; floor 2000 ms)`);
} finally {
  await ws.cleanUp();
}
