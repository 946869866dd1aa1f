/**
 * The web process hears the end of a certificate job from the worker over PostgreSQL NOTIFY. A notification that never
 * arrives (here: the PostgreSQL backend of the web process's LISTEN connection stopped with SIGSTOP, so the connection
 * stays open and silent, and the ping that would notice it is far off) must not hang the request: the waiter reads
 * the job's state itself and answers as it would have, the issued certificate or the refusal the worker decided.
 */
import test from 'ava';
import { makeCsr, opensslVerify } from '../helpers/pki.js';
import { errorCode } from '../helpers/refusals.js';
import { useStack, waitFor, type HubFixture } from '../helpers/stack.js';

// the silent connection is not found out during the file: only the waiter's own reading can answer
const stack = useStack(test, { env: { HUB_DB_LISTEN_PING_MS: '600000', HUB_ISSUANCE_WAIT_MS: '15000' } });
const stopped = new Set<number>();
stack.onStop(async () => {
  for (const pid of stopped) process.kill(pid, 'SIGCONT');
});

async function jwtOf(hub: HubFixture, name: string): Promise<string> {
  const tok = await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name, commonName: `${name}.example.com` } });
  if (tok.status !== 201) throw new Error(`create token: ${tok.status} ${tok.text}`);
  const jwt = await hub.call('GET', `${hub.h2}/certificate-request-tokens/${tok.json.id}/enrollment-jwt`);
  if (jwt.status !== 200) throw new Error(`jwt: ${jwt.status} ${jwt.text}`);
  return jwt.json.jwt;
}

const enroll = (hub: HubFixture, jwt: string, csr: string) => stack.call('POST', `${hub.h2}/client-certificates/enroll`, { body: { jwt, csr } });

test.serial('notifications of job ends lost: enrollments still get their certificate or their refusal', async (t) => {
  const hub = await stack.hub();
  // the first enrollment starts the process's listening for job ends, heard as usual
  const first = await enroll(hub, await jwtOf(hub, 'heard'), await makeCsr('/CN=heard.example.com'));
  t.is(first.status, 201, first.text);

  const pid = await waitFor(
    async () => {
      const { rows } = await stack.sql.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'edgehub-app-listen'`,
      );
      return rows.length === 1 && rows[0].pid;
    },
    { what: 'the LISTEN connection of the API' },
  );
  process.kill(pid, 'SIGSTOP');
  stopped.add(pid);

  // one device: its certificate
  const alone = await enroll(hub, await jwtOf(hub, 'unheard'), await makeCsr('/CN=unheard.example.com'));
  t.is(alone.status, 201, alone.text);
  t.true((await opensslVerify(alone.json.value, alone.json.chain)).ok);

  // devices racing for one JWT: one certificate; the others refused, some by the worker (their jobs failed)
  const jwt = await jwtOf(hub, 'race');
  const csrs = await Promise.all(Array.from({ length: 8 }, () => makeCsr('/CN=race.example.com')));
  const results = await Promise.all(csrs.map((csr) => enroll(hub, jwt, csr)));
  t.deepEqual(results.map((r) => r.status).sort(), [201, ...Array(7).fill(403)], results.map((r) => r.text).join('\n'));
  for (const r of results.filter((r) => r.status === 403)) t.true(['EH_TOKEN_SPENT', 'EH_JWT_SPENT'].includes(errorCode(r) ?? ''), r.text);
  const executions = await hub.call('GET', `${hub.h}/executions?size=50`);
  const failed = executions.json.content.filter((e: { type: string; status: string }) => e.type === 'pki.issueCertificate' && e.status === 'FAILED');
  t.true(failed.length >= 1, 'a refusal the worker decided came back through the reading of its job');
  t.is(results.filter((r) => errorCode(r) === 'EH_TOKEN_SPENT').length, failed.length);
});
