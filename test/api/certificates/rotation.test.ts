import test from 'ava';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import pg from 'pg';
import { makeCsr } from '../../helpers/pki.js';
import { useStack, waitFor, type HubFixture } from '../../helpers/stack.js';
import { lastScheduledRotation, rotationCatchUp, rotationOverdue } from '../../../workers/schedules/signingKeyRotation.js';
import { requestRotation } from '../../../domain/commands/signingKeys.js';

const stack = useStack(test);

const jwks = async () => (await stack.call('GET', '/hub/v2/public/.well-known/jwks.json')).json as { keys: { kid: string }[] };
const kids = async () => (await jwks()).keys.map((k) => k.kid);
const rotate = () => stack.call('POST', '/admin/v1/signing-keys:rotate', { auth: stack.admin });

async function tokenJwt(hub: HubFixture, body: Record<string, unknown>) {
  const tok = await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body });
  const r = await hub.call('GET', `${hub.h2}/certificate-request-tokens/${tok.json.id}/enrollment-jwt`);
  if (r.status !== 200) throw new Error(`jwt: ${r.status} ${r.text}`);
  return { token: tok.json, jwt: r.json.jwt as string, kid: decodeProtectedHeader(r.json.jwt).kid as string };
}

// these tests rotate the one process-wide key: run them one after the other
test.serial('rotation: 200 with the new kid; old JWTs keep verifying and enrolling until they expire', async (t) => {
  const hub = await stack.hub();
  const old = await tokenJwt(hub, { name: 'before' });
  const r = await rotate();
  t.is(r.status, 200, r.text);
  t.is(typeof r.json.kid, 'string');
  t.not(r.json.kid, old.kid);
  const published = await kids();
  t.true(published.includes(old.kid), 'the superseded key stays published');
  t.true(published.includes(r.json.kid));
  const fresh = await tokenJwt(hub, { name: 'after' });
  t.is(fresh.kid, r.json.kid, 'new JWTs use the new key');
  const set = createLocalJWKSet(await jwks());
  for (const { jwt } of [old, fresh]) await t.notThrowsAsync(jwtVerify(jwt, set, { issuer: 'hub', audience: hub.hubId }));
  const enrolled = await stack.call('POST', `${hub.h2}/client-certificates/enroll`, { body: { jwt: old.jwt, csr: await makeCsr('/CN=before') } });
  t.is(enrolled.status, 201, enrolled.text);
});

test.serial('a superseded key is dropped once every JWT it signed has expired', async (t) => {
  const hub = await stack.hub();
  const unused = (await rotate()).json.kid as string;
  const short = await tokenJwt(hub, { name: 'short', ttl: 'PT2S' });
  t.is(short.kid, unused);
  const next = (await rotate()).json.kid as string;
  t.true((await kids()).includes(short.kid), 'published while its JWT is valid');
  await waitFor(async () => !(await kids()).includes(short.kid), { timeoutMs: 10_000, what: 'the key to leave the JWKS' });
  const after = await rotate();
  t.is(after.status, 200);
  t.false((await kids()).includes(short.kid));
  t.true((await kids()).includes(after.json.kid));
  t.false((await kids()).includes(next), 'a superseded key that signed nothing leaves at once');
  const client = new pg.Client({ connectionString: stack.databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT kid FROM signing_keys WHERE kid = $1', [short.kid]);
    t.is(rows.length, 0, 'the rotation job deleted it');
    const { rows: unusedRows } = await client.query('SELECT kid FROM signing_keys WHERE kid = $1', [next]);
    t.is(unusedRows.length, 0, 'a retired key that signed nothing is dropped at once');
  } finally {
    await client.end();
  }
});

test.serial('two rotation requests for the same key are one job and one rotation', async (t) => {
  const before = await kids();
  await stack.stopWorkers();
  const { rotationSchedule: schedule } = await import('../../../workers/schedules/signingKeyRotation.js');
  await Promise.all([schedule.run(), schedule.run(), schedule.run()]);
  await stack.startWorkers();
  const client = new pg.Client({ connectionString: stack.databaseUrl });
  await client.connect();
  try {
    const done = await waitFor(
      async () => {
        const { rows } = await client.query("SELECT id, status, result FROM executions WHERE type = 'pki.rotateSigningKey' AND created_by = 'clock'");
        return rows.length && rows.every((r) => r.status === 'SUCCEEDED') ? rows : undefined;
      },
      { what: 'the rotation job' },
    );
    t.is(done.length, 1, 'one execution');
    const { rows } = await client.query("SELECT count(*)::int AS n FROM signing_keys WHERE status = 'ACTIVE'");
    t.is(rows[0].n, 1);
    const after = await kids();
    t.true(after.includes(done[0].result.kid));
    t.is(after.filter((k) => !before.includes(k)).length, 1, 'exactly one new key');
  } finally {
    await client.end();
  }
});

test('the last scheduled rotation is read from the cron expression, in the time zone node-cron reads it in', (t) => {
  const now = new Date(2026, 10, 27, 3, 15, 0);
  t.deepEqual(lastScheduledRotation(now, '0 0 1 * *'), new Date(2026, 10, 1, 0, 0, 0));
  t.deepEqual(lastScheduledRotation(now, '0 4 * * *'), new Date(2026, 10, 26, 4, 0, 0));
  t.deepEqual(lastScheduledRotation(now, '30 */5 * * * *'), new Date(2026, 10, 27, 3, 10, 30));
});

test.serial('a missed rotation (the clock down or a store away at its tick) is made up by the next catch-up, once', async (t) => {
  await rotate(); // an active key made now
  t.is(await rotationOverdue(), undefined, 'a key made after the last scheduled rotation is not overdue');
  const executions = async () =>
    (await stack.sql.query("SELECT id, status, result FROM executions WHERE type = 'pki.rotateSigningKey' AND created_by = 'clock' ORDER BY created_at")).rows;
  const before = (await executions()).length;
  await rotationCatchUp.run();
  t.is((await executions()).length, before, 'nothing to make up: no rotation asked for');

  // the active key is older than the last scheduled rotation: that tick was missed
  const { rows } = await stack.sql.query<{ kid: string }>(
    "UPDATE signing_keys SET created_at = $1::timestamptz - interval '1 second' WHERE status = 'ACTIVE' RETURNING kid",
    [lastScheduledRotation()],
  );
  t.is(await rotationOverdue(), rows[0].kid);
  await rotationCatchUp.run();
  await rotationCatchUp.run(); // a second catch-up before the job ran asks for the same rotation
  const done = await waitFor(
    async () => {
      const all = (await executions()).slice(before);
      return all.length && all.every((e) => e.status === 'SUCCEEDED') ? all : undefined;
    },
    { what: 'the catch-up rotation' },
  );
  t.is(done.length, 1, 'one rotation');
  t.not(done[0].result.kid, rows[0].kid);
  t.true((await kids()).includes(done[0].result.kid));
  t.is(await rotationOverdue(), undefined, 'made up');
  await rotationCatchUp.run();
  t.is((await executions()).length, before + 1, 'and not made up twice');
  // a rotation asked for a key that another rotation replaced meanwhile is not made
  t.is(await requestRotation('clock', rows[0].kid), undefined);
  t.is((await executions()).length, before + 1);
});

test('the rotation endpoint is for the operator only', async (t) => {
  const hub = await stack.hub();
  t.is((await stack.call('POST', '/admin/v1/signing-keys:rotate')).status, 401);
  const r = await stack.call('POST', '/admin/v1/signing-keys:rotate', { auth: hub.bearer });
  t.is(r.status, 403);
  t.is(r.json.error, 'forbidden', 'a hub key on the operator API');
});

test('private keys are sealed at rest and never in a response', async (t) => {
  const hub = await stack.hub();
  const c = await hub.call('POST', `${hub.h}/client-certificates`, { body: { name: 'sealed', value: await makeCsr('/CN=sealed') } });
  t.is(c.status, 201);
  const client = new pg.Client({ connectionString: stack.databaseUrl });
  await client.connect();
  try {
    const cas = await client.query('SELECT kind, private_key_sealed FROM certificate_authorities');
    t.true(cas.rows.some((r) => r.kind === 'ROOT') && cas.rows.some((r) => r.kind === 'ISSUING'));
    const keys = await client.query('SELECT private_key_sealed, public_jwk FROM signing_keys');
    for (const row of [...cas.rows, ...keys.rows]) {
      t.regex(row.private_key_sealed, /^v1\./);
      t.notRegex(row.private_key_sealed, /PRIVATE KEY/);
    }
    for (const row of keys.rows) t.false('d' in row.public_jwk);
  } finally {
    await client.end();
  }
  const got = await hub.call('GET', `${hub.h}/client-certificates/${c.json.id}`);
  t.notRegex(got.text, /PRIVATE KEY|v1\./);
});
