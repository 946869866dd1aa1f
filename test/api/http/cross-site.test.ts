/**
 * No change of state from another site, over plain HTTP: every POST, PUT, PATCH and DELETE the API registers (the
 * operator's, the hubs', the unauthenticated ones) is refused with an `Origin` that is not the service's own or a
 * `Sec-Fetch-Site` of another site (403), and with Basic credentials unless it says `Content-Type: application/json`,
 * even without a body (415); nothing changes. Clients without an Origin (curl, agents, servers), the service's own
 * origin (PUBLIC_BASE_URL's, or the one the request came to) and every read keep working.
 * test/system/cross-site-forms.test.ts does the same attack with forms in a real browser.
 */
import test from 'ava';
import { operations } from '../../../api/openapi/operations.js';
import { sweepFixture, type Sweep } from '../../helpers/apiSweep.js';
import { assertRefused } from '../../helpers/refusals.js';
import { useStack, waitFor } from '../../helpers/stack.js';

// the service's public address is not the one the tests reach it at (http://127.0.0.1:PORT): both are its own
const PUBLIC = 'https://edgehub.example.com';
const stack = useStack(test, { env: { PUBLIC_BASE_URL: `${PUBLIC}/` } });
let sweep: Sweep;

test.before(async () => {
  sweep = await sweepFixture(stack);
  // the fixture's own work done (shares provisioned, CA made, tunnel deployed), so that nothing changes by itself
  await waitFor(async () => (await stack.sql.query(`SELECT count(*)::int AS n FROM executions WHERE status NOT IN ('SUCCEEDED', 'FAILED')`)).rows[0].n === 0, {
    what: 'every execution finished',
  });
});

const adminBasic = () => `Basic ${Buffer.from(`admin:${stack.adminToken}`).toString('base64')}`;
const changes = () => sweep.ordered().filter((op) => op.method !== 'get');

/** What a forged request could have changed: every table's rows a change of state writes, in one string. */
async function state(): Promise<string> {
  const tables = [
    'hubs',
    'api_keys',
    'environments',
    'shares',
    'certificate_request_tokens',
    'client_certificates',
    'health_checks',
    'ipsec_tunnels',
    'ipsec_shares',
    'frontends',
    'custom_frontends',
    'auth_providers',
    'signing_keys',
    'executions',
    'agents',
  ];
  const rows = await Promise.all(
    tables.map(async (table) => (await stack.sql.query(`SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS h FROM ${table} t`)).rows[0].h as string),
  );
  return tables.map((table, i) => `${table}:${rows[i]}`).join(' ');
}

const activeKid = async () => (await stack.sql.query(`SELECT kid FROM signing_keys WHERE status = 'ACTIVE'`)).rows[0]?.kid as string;

test.serial('every change of state with an Origin of another site, or a Sec-Fetch-Site of another, is 403 and changes nothing', async (t) => {
  t.true(changes().length > 40, 'the sweep covers the state-changing routes');
  const before = await state();
  const foreign: Record<string, string>[] = [
    { origin: 'http://evil.example' },
    { origin: 'null' },
    // a share's page under the service's own domain is another origin all the same
    { origin: 'https://abc123.share.edgehub.example.com' },
    // the service's host on another scheme or port
    { origin: 'http://edgehub.example.com' },
    { origin: `${stack.baseUrl.replace('127.0.0.1', 'localhost')}` },
    { origin: `${PUBLIC}/` },
    { 'sec-fetch-site': 'cross-site' },
    { 'sec-fetch-site': 'same-site' },
    // a browser's own Origin with a Sec-Fetch-Site saying another site sent it
    { origin: stack.baseUrl, 'sec-fetch-site': 'cross-site' },
  ];
  const wrong: string[] = [];
  for (const op of changes()) {
    for (const headers of foreign) {
      const path = sweep.pathOf(op);
      const r = await stack.call(op.method.toUpperCase(), path, { auth: sweep.authOf(op), body: sweep.baseOf(op), headers });
      if (r.status !== 403 || r.headers.get('edgehub-error-code') !== 'EH_ORIGIN_REFUSED' || r.json?.error !== 'forbidden') {
        wrong.push(`${op.method.toUpperCase()} ${path} ${JSON.stringify(headers)}: ${r.status} ${r.text.slice(0, 120)}`);
      }
    }
  }
  t.deepEqual(wrong, []);
  t.is(await state(), before, 'nothing changed');

  const one = await stack.call('POST', '/admin/v1/signing-keys:rotate', { auth: stack.admin, headers: { origin: 'http://evil.example' } });
  assertRefused(t, one, 403, 'forbidden', 'EH_ORIGIN_REFUSED', '"http://evil.example"');
});

test.serial('every change of state with Basic credentials needs Content-Type: application/json, even without a body (415)', async (t) => {
  const before = await state();
  const wrong: string[] = [];
  const basicOf = (scope: string) => (scope === 'admin' ? adminBasic() : sweep.hub.basic);
  for (const op of changes().filter((o) => o.scope !== 'open')) {
    const path = sweep.pathOf(op);
    const json = JSON.stringify(sweep.baseOf(op));
    for (const [what, raw, type] of [
      ['no body, no type', undefined, undefined],
      ['text/plain (a form)', json, 'text/plain'],
      ['url-encoded (a form)', 'a=1', 'application/x-www-form-urlencoded'],
      ['multipart (a form)', '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--\r\n', 'multipart/form-data; boundary=x'],
      ['text/plain without a body', '', 'text/plain'],
    ] as const) {
      const r = await stack.call(op.method.toUpperCase(), path, { auth: basicOf(op.scope), raw, headers: type ? { 'content-type': type } : {} });
      if (r.status !== 415 || r.headers.get('edgehub-error-code') !== 'EH_UNSUPPORTED_MEDIA_TYPE')
        wrong.push(`${op.method.toUpperCase()} ${path} ${what}: ${r.status} ${r.text.slice(0, 120)}`);
    }
  }
  t.deepEqual(wrong, []);
  t.is(await state(), before, 'nothing changed');

  const kid = await activeKid();
  const empty = await stack.call('POST', '/admin/v1/signing-keys:rotate', { auth: adminBasic(), raw: '', headers: { 'content-type': 'text/plain' } });
  assertRefused(t, empty, 415, 'unsupported_media_type', 'EH_UNSUPPORTED_MEDIA_TYPE', 'Content-Type: application/json');
  t.is(await activeKid(), kid, 'the active signing key did not change');
});

test.serial("the service's own origins, clients without an Origin and Basic with JSON keep working", async (t) => {
  // the operator with the admin token and no Origin (curl, scripts): no content type needed for an empty body
  let kid = await activeKid();
  const curl = await stack.call('POST', '/admin/v1/signing-keys:rotate', { auth: stack.admin });
  t.is(curl.status, 200, curl.text);
  t.not(await activeKid(), kid);
  // PUBLIC_BASE_URL's origin, and the one the request came to (the console opened at http://127.0.0.1:PORT)
  for (const headers of [
    { origin: PUBLIC },
    { origin: stack.baseUrl },
    { origin: stack.baseUrl, 'sec-fetch-site': 'same-origin' },
    { 'sec-fetch-site': 'none' },
  ] as Record<string, string>[]) {
    kid = await activeKid();
    const r = await stack.call('POST', '/admin/v1/signing-keys:rotate', { auth: stack.admin, headers });
    t.is(r.status, 200, `${JSON.stringify(headers)}: ${r.text}`);
    t.not(await activeKid(), kid);
  }
  // Basic with JSON, with and without a body
  kid = await activeKid();
  const basic = await stack.call('POST', '/admin/v1/signing-keys:rotate', {
    auth: adminBasic(),
    raw: '',
    headers: { 'content-type': 'application/json', origin: stack.baseUrl },
  });
  t.is(basic.status, 200, basic.text);
  t.not(await activeKid(), kid);
  const hub = sweep.hub;
  const env = await stack.call('POST', `${hub.h}/environments`, { auth: hub.basic, body: { description: 'basic' } });
  t.is(env.status, 201, env.text);
  const gone = await stack.call('DELETE', `${hub.h}/environments/${env.json.envZId}`, { auth: hub.basic, headers: { 'content-type': 'application/json' } });
  t.is(gone.status, 204, gone.text);
  // reads are not changes: any Origin, Basic without a type
  const read = await stack.call('GET', `${hub.h}/environments`, {
    auth: hub.basic,
    headers: { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' },
  });
  t.is(read.status, 200);
  // an unauthenticated route without an Origin meets its own checks (here: a JWT that is not one), not this one
  const enroll = await stack.call('POST', `${hub.h}/agents/enroll`, { body: { jwt: 'x', csr: 'y' } });
  t.is(enroll.status, 403);
  t.not(enroll.headers.get('edgehub-error-code'), 'EH_ORIGIN_REFUSED');
});

test('the sweep knows every state-changing operation of the API', (t) => {
  t.is(changes().length, operations.filter((op) => op.method !== 'get').length);
});
