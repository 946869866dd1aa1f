/**
 * Certificate request token strings are encrypted at rest: no column of the row holds the string, the sealed copy
 * decrypts to it, look-ups go by its digest, and the API still presents it (the API returns `token`).
 */
import test from 'ava';
import pg from 'pg';
import { decryptSecret, sha256 } from '../../../shared/secrets.js';
import { useStack } from '../../helpers/stack.js';

const stack = useStack(test, { workers: false });

test('no column holds a token string in clear; the API still shows and finds it', async (t) => {
  const hub = await stack.hub();
  const tok = await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name: 'sealed-1' } });
  t.is(tok.status, 201);
  const token: string = tok.json.token;
  t.regex(token, /^[A-Za-z0-9_-]{32}$/);
  const client = new pg.Client({ connectionString: stack.databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT * FROM certificate_request_tokens WHERE id = $1', [tok.json.id]);
    t.is(rows.length, 1);
    const text = JSON.stringify(rows[0], (_k, v) => (Buffer.isBuffer(v) ? v.toString('hex') : v));
    t.false(text.includes(token), 'the string is in no column');
    t.false('token' in rows[0], 'no clear column');
    t.is(decryptSecret(rows[0].token_sealed), token);
    t.deepEqual(rows[0].token_digest, sha256(token));
  } finally {
    await client.end();
  }
  for (const path of [
    `${hub.h}/certificate-request-tokens/${tok.json.id}`,
    `${hub.h}/certificate-request-tokens/by-token/${token}`,
    `${hub.h2}/certificate-request-tokens/token/${token}`,
  ]) {
    const r = await hub.call('GET', path);
    t.is(r.status, 200, path);
    t.is(r.json.token, token);
  }
  const list = await hub.call('GET', `${hub.h}/certificate-request-tokens`);
  t.is(list.json.content[0].token, token);
  const patched = await hub.call('PATCH', `${hub.h}/certificate-request-tokens/${tok.json.id}`, { body: { name: 'sealed-2' } });
  t.is(patched.json.token, token, 'unchanged by an update');
});
