/**
 * No secret in any log line: a pass over every route that takes or returns a secret (API keys, certificate request
 * token strings in bodies and paths, enrollment JWTs, auth provider client secrets, IPsec pre-shared keys, the keys
 * sealed in the database), failures included, then this process's log file is searched for each of them.
 * `npm test` runs the same scan over every log line of the whole run afterwards (test/helpers/logScan.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import test from 'ava';
import Koa from 'koa';
import { QueryTypes } from 'sequelize';
import { requestEdge } from '../../api/middleware/requestEdge.js';
import { db } from '../../shared/db.js';
import { logger } from '../../shared/logger.js';
import { decryptSecret } from '../../shared/secrets.js';
import { ownLogFile, registerSecret, registeredSecrets, scanLogs, logDir } from '../helpers/logScan.js';
import { makeCsr } from '../helpers/pki.js';
import { makeCall, useStack, waitFor } from '../helpers/stack.js';

const stack = useStack(test);

/** The secrets this process registered (the run's folder holds every process's; ours is enough here). */
const ownSecrets = () => registeredSecrets(logDir()!);

const ownText = () => {
  const file = ownLogFile()!;
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
};

test.serial('every route that takes or returns a secret leaves none of them in the log', async (t) => {
  if (!logDir()) return t.fail('run with `npm test`: it gives the processes a log folder (HUB_LOG_DIR)');
  const hub = await stack.hub({ ipsec: true });
  const { h, h2, call } = hub;

  // API keys: created (token shown once), used as Bearer and Basic, a wrong one, revoked
  const key = await stack.call('POST', `/admin/v1/hubs/${hub.hubId}/api-keys`, { auth: stack.admin, body: { name: 'scan' } });
  t.is(key.status, 201);
  t.is((await call('GET', `${h}/certificate-request-tokens`, { auth: `Bearer ${key.json.token}` })).status, 200);
  t.is(
    (await call('GET', `${h}/certificate-request-tokens`, { auth: 'Basic ' + Buffer.from(`${key.json.username}:${key.json.token}`).toString('base64') }))
      .status,
    200,
  );
  t.is((await call('DELETE', `/admin/v1/hubs/${hub.hubId}/api-keys/${key.json.id}`, { auth: stack.admin })).status, 200);
  t.is((await call('GET', `${h}/certificate-request-tokens`, { auth: `Bearer ${key.json.token}` })).status, 401, 'a revoked key is refused');

  // certificate request tokens: every form that shows or takes the string, and the JWT
  const tok = await call('POST', `${h}/certificate-request-tokens`, { body: { name: 'scan-1', commonName: 'scan-1' } });
  t.is(tok.status, 201);
  const tokenString: string = tok.json.token;
  for (const path of [`${h}/certificate-request-tokens/by-token/${tokenString}`, `${h2}/certificate-request-tokens/token/${tokenString}`]) {
    t.is((await call('GET', path)).status, 200, path);
  }
  t.is((await call('GET', `${h}/certificate-request-tokens/by-token/${tokenString}x`)).status, 404);
  t.is((await call('PATCH', `${h}/certificate-request-tokens/${tok.json.id}`, { body: { organization: 'Acme' } })).status, 200);
  t.is((await call('GET', `${h}/certificate-request-tokens/${tok.json.id}`)).status, 200);
  const jwt = await call('GET', `${h2}/certificate-request-tokens/${tok.json.id}/enrollment-jwt`);
  t.is(jwt.status, 200);
  const csr = await makeCsr('/CN=scan-1/O=Acme');
  const enrollPath = `${h2}/client-certificates/enroll`;
  t.is((await stack.call('POST', enrollPath, { body: { jwt: jwt.json.jwt, csr }, headers: { 'x-validate': 'true' } })).status, 200);
  t.is((await stack.call('POST', enrollPath, { body: { jwt: jwt.json.jwt.slice(0, -4) + 'AAAA', csr } })).status, 403);
  t.is((await stack.call('POST', enrollPath, { body: { jwt: jwt.json.jwt, csr } })).status, 201);
  t.is((await stack.call('POST', enrollPath, { body: { jwt: jwt.json.jwt, csr } })).status, 200, 'a retry with the same key');
  t.is((await stack.call('POST', enrollPath, { body: { jwt: jwt.json.jwt, csr: await makeCsr('/CN=scan-1/O=Acme') } })).status, 403, 'spent');

  // the token-in-path redemption: a wrong token, a right one, a spent one
  const tok2 = await call('POST', `${h}/certificate-request-tokens`, { body: { name: 'scan-2' } });
  const redeem = (t: string) => stack.call('POST', `${h2}/client-certificates/token/${t}`, { body: { type: 'CSR', value: csr } });
  // another last character than the token's (a token ending in 'A' made the same token again: 1 run in 64)
  const wrong = tok2.json.token.slice(0, -1) + (tok2.json.token.endsWith('A') ? 'B' : 'A');
  t.is((await redeem(wrong)).status, 403);
  t.is((await redeem(tok2.json.token)).status, 201);
  t.is((await redeem(tok2.json.token)).status, 403);
  const tok3 = await call('POST', `${h}/certificate-request-tokens`, { body: { name: 'scan-3' } });
  t.is((await call('DELETE', `${h}/certificate-request-tokens/${tok3.json.id}`)).status, 200);
  // a path no route matches, with a token in it
  t.is((await stack.call('GET', `${h2}/client-certificates/token/${tok3.json.token}/nothing`)).status, 404);

  // auth providers: the client secret is written, changed, never returned
  const provider = await call('POST', `${h}/auth-providers`, {
    body: {
      name: 'sso',
      type: 'OIDC',
      config: { clientId: 'c1', clientSecret: 'client-secret-one-value', issuerUrl: 'https://id.example.com' },
      emailPatterns: ['*@example.com'],
    },
  });
  t.is(provider.status, 201, provider.text);
  const patch = await call('PATCH', `${h}/auth-providers/${provider.json.id}`, { body: { config: { clientSecret: 'client-secret-two-value' } } });
  t.true(patch.status < 300, patch.text);
  t.is((await call('POST', `${h}/auth-providers`, { body: { name: 'bad', type: 'OIDC', config: { clientSecret: 'client-secret-bad-value' } } })).status, 400);

  // IPsec: the pre-shared key is in the sample configuration only
  const tunnel = await call('POST', `${h2}/ipsec-tunnels`, { body: { name: 'office', peerPublicIp: '203.0.113.10', peerCidr: '192.168.10.0/24' } });
  t.true(tunnel.status < 300, tunnel.text);
  await waitFor(async () => (await call('GET', `${h2}/ipsec-tunnels/${tunnel.json.id}`)).json?.status === 'DEPLOYED', { what: 'tunnel DEPLOYED' });
  const sample = await call('GET', `${h2}/ipsec-tunnels/${tunnel.json.id}/sample-config`, { headers: { accept: 'text/plain' } });
  t.is(sample.status, 200);

  // signing keys: a rotation
  t.is((await stack.call('POST', '/admin/v1/signing-keys:rotate', { auth: stack.admin })).status, 200);

  // an unexpected database error whose statement carries a secret goes through the error middleware
  const secret = 'tok_' + 'Z'.repeat(28);
  registerSecret('token string', secret);
  const app = new Koa();
  app.silent = true;
  app.use(requestEdge);
  app.use(async () => {
    await db().query('INSERT INTO certificate_request_tokens (id, token) VALUES (:id, :token)', { replacements: { id: 'x', token: secret } });
  });
  const server = app.listen(0);
  const port = (server.address() as { port: number }).port;
  const failed = await makeCall(`http://127.0.0.1:${port}`)('GET', '/x');
  server.close();
  t.is(failed.status, 500);

  // the second line of defence: secret keys at any depth are redacted
  const nested = 'nested-secret-' + 'Q'.repeat(20);
  registerSecret('client secret', nested);
  registerSecret('token string', 'top-level-' + 'R'.repeat(20));
  logger.info({ token: 'top-level-' + 'R'.repeat(20), provider: { config: { clientSecret: nested } } }, 'redaction check');

  // everything the database keeps sealed: CA and signing private keys, pre-shared keys, client secrets
  const columns = await db().query<{ table_name: string; column_name: string }>(
    `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' AND column_name LIKE '%\\_sealed'`,
    { type: QueryTypes.SELECT },
  );
  let sealed = 0;
  for (const c of columns) {
    const rows = await db().query<{ v: string | null }>(`SELECT "${c.column_name}" AS v FROM "${c.table_name}"`, { type: QueryTypes.SELECT });
    for (const r of rows) if (r.v) registerSecret(`${c.table_name}.${c.column_name}`, decryptSecret(r.v)), sealed++;
  }
  t.true(sealed >= 4, `sealed secrets found: ${sealed}`);

  const text = ownText();
  t.regex(text, /client-certificates\/token\/:token/, 'the access log names the route template');
  t.regex(text, /"msg":"unexpected error"/, 'the database error was logged');
  t.regex(text, /redaction check/);
  const secrets = ownSecrets();
  t.true(secrets.length >= 10, `secrets registered: ${secrets.length}`);
  const leaks = scanLogs(secrets, [ownLogFile()!]);
  t.deepEqual(
    leaks.map((l) => `${l.kind} at line ${l.line}`),
    [],
    'no secret in the log',
  );
});
