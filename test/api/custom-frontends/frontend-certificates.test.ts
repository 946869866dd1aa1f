/**
 * The commands that keep what the certificate issuers need (domain/commands/frontendCertificates.ts), called
 * directly: HTTP adds nothing here. The local frontend CA is made once however many first uses race, its key is
 * sealed at rest, the certificates it signs chain to it; the validation zone's records are published, found and
 * withdrawn by normalized name. And the leaf validity both certificate kinds use.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import test from 'ava';
import { leafValidity, BACKDATE_MS } from '../../../domain/commands/certificateAuthorities.js';
import { issueFromLocalCa, localFrontendCa, validationRecords } from '../../../domain/commands/frontendCertificates.js';
import { useStack } from '../../helpers/stack.js';

const stack = useStack(test, { workers: false });

test.serial('concurrent first uses of the local frontend CA agree on one CA, stored with its key sealed', async (t) => {
  await stack.sql.query(`DELETE FROM frontend_issuers`);
  const cas = await Promise.all(Array.from({ length: 8 }, () => localFrontendCa()));
  t.is(new Set(cas.map((c) => c.certificatePem)).size, 1, 'every caller got the CA that won the insert');
  t.is(new Set(cas.map((c) => c.privateKeyPem)).size, 1);
  const rows = (await stack.sql.query(`SELECT certificate_pem, private_key_sealed FROM frontend_issuers`)).rows;
  t.is(rows.length, 1);
  t.is(rows[0].certificate_pem, cas[0].certificatePem);
  t.notRegex(rows[0].private_key_sealed, /PRIVATE KEY/, 'the key is sealed at rest');
  const ca = new X509Certificate(cas[0].certificatePem);
  t.true(ca.ca);
  t.true(ca.checkPrivateKey(createPrivateKey(cas[0].privateKeyPem)), 'the key handed out is the CA certificate’s');
});

test.serial('a certificate from the local CA chains to it and names the domain and its subdomains', async (t) => {
  const ca = new X509Certificate((await localFrontendCa()).certificatePem);
  const issued = await issueFromLocalCa('files.example.com');
  const leaf = new X509Certificate(issued.certificatePem);
  t.true(leaf.checkIssued(ca) && leaf.verify(ca.publicKey));
  t.is(leaf.subjectAltName, 'DNS:files.example.com, DNS:*.files.example.com');
  t.false(leaf.ca);
  t.is(issued.issuer, 'local-ca');
  const days = (issued.notAfter.getTime() - Date.now()) / 86_400_000;
  t.true(days > 89.9 && days <= 90, `${days} days`);
  t.true(leaf.checkPrivateKey(createPrivateKey(issued.privateKeyPem)));
});

test.serial('validation records: published once under the normalized name, found, withdrawn', async (t) => {
  await validationRecords.publish('Token.Validation.Example.', 'value-1');
  await validationRecords.publish('token.validation.example', 'value-1'); // again: one record
  await validationRecords.publish('token.validation.example', 'value-2');
  t.deepEqual((await validationRecords.lookup('token.validation.example')).sort(), ['value-1', 'value-2']);
  await validationRecords.withdraw('TOKEN.validation.example', 'value-1');
  t.deepEqual(await validationRecords.lookup('token.validation.example'), ['value-2']);
  await validationRecords.withdraw('token.validation.example', 'value-2');
  t.deepEqual(await validationRecords.lookup('token.validation.example'), []);
});

test('leaf validity: backdated, on whole seconds, in calendar years', (t) => {
  const now = Date.UTC(2028, 1, 29, 12, 0, 0, 789); // 29 February of a leap year
  const { notBefore, notAfter } = leafValidity(1, now);
  t.is(notBefore.getTime() % 1000, 0);
  t.is(notAfter.getTime() % 1000, 0);
  t.is(notBefore.getTime(), Math.floor((now - BACKDATE_MS) / 1000) * 1000);
  t.is(notAfter.toISOString(), '2029-03-01T12:00:00.000Z', 'a year after 29 February is 1 March');
  t.is(leafValidity(3, Date.UTC(2026, 10, 25)).notAfter.toISOString(), '2029-11-25T00:00:00.000Z');
});
