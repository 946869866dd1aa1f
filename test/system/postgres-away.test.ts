import test from 'ava';
import pg from 'pg';
import { stopDatabase } from '../helpers/outage.js';
import { makeCsr } from '../helpers/pki.js';
import { useStack } from '../helpers/stack.js';

/**
 * PostgreSQL away (every connection of this test's database cut, new ones refused, as in a restart or a maintenance
 * window): the API answers 503 `unavailable` with Retry-After, never 500 "unexpected error", whether the request
 * found a pooled connection cut, or could not open one; it writes nothing; and it answers as before once the
 * database is back.
 */

const stack = useStack(test);

test.serial('PostgreSQL away: reads, writes, admin, JWKS and enrollment answer 503 unavailable; nothing is written; all is back after', async (t) => {
  const hub = await stack.hub();
  const tok = await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name: 'before' } });
  t.is(tok.status, 201, tok.text);
  const jwt = (await hub.call('GET', `${hub.h2}/certificate-request-tokens/${tok.json.id}/enrollment-jwt`)).json.jwt as string;
  const csr = await makeCsr('/CN=while-postgres-is-away');
  const enroll = { jwt, csr };

  const requests: { method: string; path: string; auth?: string; body?: unknown }[] = [
    { method: 'GET', path: `${hub.h}/certificate-request-tokens/${tok.json.id}`, auth: hub.bearer },
    { method: 'GET', path: `${hub.h2}/certificate-request-tokens`, auth: hub.bearer },
    { method: 'POST', path: `${hub.h}/certificate-request-tokens`, auth: hub.bearer, body: { name: 'during' } },
    { method: 'GET', path: '/admin/v1/hubs', auth: stack.admin },
    { method: 'GET', path: '/hub/v2/public/.well-known/jwks.json' },
    { method: 'POST', path: `${hub.h2}/client-certificates/enroll`, body: enroll },
  ];

  const outage = await stopDatabase(stack.databaseUrl);
  try {
    for (const r of requests) {
      const answer = await stack.call(r.method, r.path, { auth: r.auth, body: r.body });
      t.is(answer.status, 503, `${r.method} ${r.path}: ${answer.text}`);
      t.deepEqual(answer.json, { error: 'unavailable', message: 'the database (PostgreSQL) cannot be reached; retry after 5 s' });
      t.is(answer.headers.get('retry-after'), '5');
      t.is(answer.headers.get('edgehub-error-code'), 'EH_UNAVAILABLE');
    }
    const health = await stack.call('GET', '/healthz');
    t.is(health.status, 503);
    t.regex(health.json.postgres, /unavailable/);
  } finally {
    await outage.end();
  }

  // back: the same requests answer as usual, and the write refused during the outage did not happen
  const list = await hub.call('GET', `${hub.h}/certificate-request-tokens`);
  t.is(list.status, 200, list.text);
  t.deepEqual(
    list.json.content.map((x: { name: string }) => x.name),
    ['before'],
  );
  t.is((await hub.call('GET', `${hub.h}/certificate-request-tokens/${tok.json.id}`)).status, 200);
  t.is((await stack.call('GET', '/admin/v1/hubs', { auth: stack.admin })).status, 200);
  t.is((await stack.call('GET', '/hub/v2/public/.well-known/jwks.json')).status, 200);
  const enrolled = await stack.call('POST', `${hub.h2}/client-certificates/enroll`, { body: enroll });
  t.is(enrolled.status, 201, 'the token was not spent by the refused enrollment');
  // no execution of the refused ones was left behind
  const sql = new pg.Client({ connectionString: stack.databaseUrl });
  await sql.connect();
  try {
    const { rows } = await sql.query(`SELECT count(*)::int AS n FROM certificate_request_tokens WHERE name = 'during'`);
    t.is(rows[0].n, 0);
  } finally {
    await sql.end();
  }
});
