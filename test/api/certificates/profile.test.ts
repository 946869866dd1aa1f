import test from 'ava';
import pg from 'pg';
import { makeCsr, makeSelfSigned, opensslVerify, tamperCsr, x509Text } from '../../helpers/pki.js';
import { useStack, type HubFixture } from '../../helpers/stack.js';
import type { ErrorCode } from '../../../shared/errors.js';
import { assertRefused } from '../../helpers/refusals.js';

const stack = useStack(test);

const certs = (hub: HubFixture, prefix: 'h' | 'h2' = 'h') => `${hub[prefix]}/client-certificates`;

test('upload: 201 without value; get returns the PEM with fingerprint, subject and validity; list has no value', async (t) => {
  const hub = await stack.hub();
  const pem = await makeSelfSigned('/CN=uploaded.example.com/O=Acme');
  const r = await hub.call('POST', certs(hub), { body: { name: 'up', value: pem } });
  t.is(r.status, 201, r.text);
  t.deepEqual(Object.keys(r.json).sort(), ['createdAt', 'createdBy', 'hubId', 'id', 'name']);
  const got = await hub.call('GET', `${certs(hub, 'h2')}/${r.json.id}`);
  t.is(got.status, 200);
  t.is(got.json.value.trim(), pem.trim());
  t.regex(got.json.fingerprintSha256, /^[0-9a-f]{64}$/);
  t.is(got.json.subject, 'CN=uploaded.example.com, O=Acme');
  t.true(new Date(got.json.notAfter) > new Date(got.json.notBefore));
  const list = await hub.call('GET', certs(hub));
  t.is(list.json.totalElements, 1);
  t.deepEqual(Object.keys(list.json.content[0]).sort(), ['createdAt', 'createdBy', 'hubId', 'id', 'name']);
});

test('create from a CSR issues through the worker; the chain verifies with openssl', async (t) => {
  const hub = await stack.hub();
  const r = await hub.call('POST', certs(hub), { body: { name: 'gen', value: await makeCsr('/CN=gen.example.com/O=Acme/OU=Ops'), validYears: 3 } });
  t.is(r.status, 201, r.text);
  const got = await hub.call('GET', `${certs(hub)}/${r.json.id}`);
  t.true((await opensslVerify(got.json.value, got.json.chain)).ok);
  const text = await x509Text(got.json.value);
  // the documented profile, and names as separate RDNs: the subject as the CSR had it, the issuer the hub's issuing CA
  t.regex(text, /X509v3 Key Usage: critical\n\s+Digital Signature, Certificate Sign, CRL Sign\n/);
  t.regex(text, /X509v3 Extended Key Usage: \n\s+TLS Web Server Authentication\n/);
  t.regex(text, /X509v3 Subject Key Identifier: /);
  t.regex(text, /X509v3 Authority Key Identifier: /);
  t.notRegex(text, /Basic Constraints/);
  t.regex(text, /Subject: CN = gen\.example\.com, O = Acme, OU = Ops\n/);
  t.regex(text, new RegExp(`Issuer: O = edgehub, OU = hub ${hub.hubId}, CN = edgehub Issuing CA\n`));
  const issuing = await x509Text(got.json.chain);
  t.regex(issuing, /Issuer: O = edgehub, CN = edgehub Root CA\n/);
  t.regex(issuing, /X509v3 Basic Constraints: critical\n\s+CA:TRUE, pathlen:0\n/);
  const years = (new Date(got.json.notAfter).getTime() - Date.now()) / (365.25 * 86400_000);
  t.true(years > 2.99 && years < 3.01);
  // one issuing CA per hub: a second certificate has the same issuer chain
  const second = await hub.call('POST', certs(hub), { body: { name: 'gen2', value: await makeCsr('/CN=gen2') } });
  t.is((await hub.call('GET', `${certs(hub)}/${second.json.id}`)).json.chain, got.json.chain);
  const other = await stack.hub();
  const foreign = await other.call('POST', certs(other), { body: { name: 'gen', value: await makeCsr('/CN=gen') } });
  t.is(foreign.status, 201);
  t.not((await other.call('GET', `${certs(other)}/${foreign.json.id}`)).json.chain, got.json.chain);
});

test('garbage values, bad CSRs and bad fields are 400s that say why; nothing is written', async (t) => {
  const hub = await stack.hub();
  // a property's problem names the property; a certificate's or CSR's problem has a code of its own
  const cases: [unknown, ErrorCode, string?][] = [
    [{ name: 'x', value: 'hello' }, 'EH_INVALID_REQUEST', '$.value'],
    [{ name: 'x', value: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' }, 'EH_CERTIFICATE_INVALID'],
    [{ name: 'x', value: tamperCsr(await makeCsr('/CN=x')) }, 'EH_CSR_INVALID', 'signature'],
    [{ name: 'x', value: await makeCsr('/CN=x', 'rsa1024') }, 'EH_CSR_INVALID', '2048'],
    [{ name: 'x' }, 'EH_INVALID_REQUEST', '$.value'],
    [{ value: await makeSelfSigned('/CN=x') }, 'EH_INVALID_REQUEST', '$.name'],
    [{ name: '', value: 'x' }, 'EH_INVALID_REQUEST', '$.name'],
  ];
  for (const [body, code, names] of cases) assertRefused(t, await hub.call('POST', certs(hub), { body }), 400, 'invalid_request', code, names);
  t.is((await hub.call('GET', certs(hub))).json.totalElements, 0);
});

test('names are unique in the hub across certificates and tokens', async (t) => {
  const hub = await stack.hub();
  const pem = await makeSelfSigned('/CN=n');
  t.is((await hub.call('POST', certs(hub), { body: { name: 'shared', value: pem } })).status, 201);
  const dupCert = await hub.call('POST', certs(hub), { body: { name: 'shared', value: pem } });
  t.is(dupCert.status, 409);
  t.is(dupCert.json.error, 'conflict');
  t.is((await hub.call('POST', certs(hub), { body: { name: 'shared', value: await makeCsr('/CN=n') } })).status, 409);
  t.is((await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name: 'shared' } })).status, 409, 'a token may not take a certificate name');
  t.is((await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name: 'tok' } })).status, 201);
  t.is((await hub.call('POST', certs(hub), { body: { name: 'tok', value: pem } })).status, 409, 'a certificate may not take a token name');
  // concurrent creates of one name across both kinds: exactly one wins
  const racers = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      i % 2
        ? hub.call('POST', certs(hub), { body: { name: 'race', value: pem } })
        : hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name: 'race' } }),
    ),
  );
  t.deepEqual(racers.map((r) => r.status).sort(), [201, ...Array(7).fill(409)]);
});

test('PATCH renames, PUT replaces name and value (upload or CSR), DELETE answers the delete record', async (t) => {
  const hub = await stack.hub();
  const first = await makeSelfSigned('/CN=first');
  const c = (await hub.call('POST', certs(hub), { body: { name: 'c1', value: first } })).json;
  await hub.call('POST', certs(hub), { body: { name: 'c2', value: first } });
  const renamed = await hub.call('PATCH', `${certs(hub)}/${c.id}`, { body: { name: 'c1b' } });
  t.is(renamed.status, 200);
  t.like(renamed.json, { id: c.id, name: 'c1b' });
  t.is((await hub.call('PATCH', `${certs(hub)}/${c.id}`, { body: { name: 'c2' } })).status, 409);
  t.is((await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name: 'c1' } })).status, 201, 'old name freed');
  const second = await makeSelfSigned('/CN=second');
  const put = await hub.call('PUT', `${certs(hub)}/${c.id}`, { body: { name: 'c1c', value: second } });
  t.is(put.status, 200);
  t.like(put.json, { name: 'c1c', subject: 'CN=second' });
  const reissue = await hub.call('PUT', `${certs(hub)}/${c.id}`, { body: { name: 'c1c', value: await makeCsr('/CN=third') } });
  t.is(reissue.status, 200, reissue.text);
  t.is(reissue.json.subject, 'CN=third');
  t.true((await opensslVerify(reissue.json.value, reissue.json.chain)).ok);
  t.is((await hub.call('PUT', `${certs(hub)}/${c.id}`, { body: { name: 'c1c' } })).status, 400, 'PUT needs the value');
  const d = await hub.call('DELETE', `${certs(hub, 'h2')}/${c.id}`);
  t.is(d.status, 200);
  t.deepEqual(Object.keys(d.json).sort(), ['deletedAt', 'deletedBy', 'hubId', 'id', 'name']);
  t.like(d.json, { id: c.id, name: 'c1c', hubId: hub.hubId });
  t.is((await hub.call('GET', `${certs(hub)}/${c.id}`)).status, 404);
  t.is((await hub.call('POST', certs(hub), { body: { name: 'c1c', value: first } })).status, 201, 'name freed by delete');
});

test('hub isolation: another hub key is 403, another hub certificate id is 404', async (t) => {
  const a = await stack.hub();
  const b = await stack.hub();
  const c = (await a.call('POST', certs(a), { body: { name: 'a-cert', value: await makeSelfSigned('/CN=a') } })).json;
  t.is((await b.call('GET', `${certs(a)}/${c.id}`)).status, 403);
  t.is((await b.call('GET', certs(a))).status, 403);
  for (const [method, body] of [['GET'], ['PATCH', { name: 'x' }], ['DELETE']] as const) {
    const r = await b.call(method, `${certs(b)}/${c.id}`, body ? { body } : {});
    t.is(r.status, 404, method);
    t.is(r.json.error, 'not_found');
  }
  t.is((await a.call('GET', `${certs(a)}/${c.id}`)).json.name, 'a-cert');
});

test('deleting a hub removes its tokens, certificates, names and issuing CA', async (t) => {
  const hub = await stack.hub();
  t.is((await hub.call('POST', certs(hub), { body: { name: 'issued', value: await makeCsr('/CN=issued') } })).status, 201);
  t.is((await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name: 'pending' } })).status, 201);
  const client = new pg.Client({ connectionString: stack.databaseUrl });
  await client.connect();
  try {
    await client.query('DELETE FROM hubs WHERE id = $1', [hub.hubId]);
    for (const table of ['client_certificates', 'certificate_request_tokens', 'pki_names', 'certificate_authorities']) {
      const { rows } = await client.query(`SELECT count(*)::int AS n FROM ${table} WHERE hub_id = $1`, [hub.hubId]);
      t.is(rows[0].n, 0, table);
    }
  } finally {
    await client.end();
  }
});
