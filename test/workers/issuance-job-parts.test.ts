/**
 * An issuance job carries the parts of a CSR the web process verified (its subject Name and key as encoded, and the
 * subject as text), not the CSR: the worker certifies those bytes without parsing a CSR again. What it still checks:
 * parts that are not a Name and a key in strict DER are a refusal for good (no retry, nothing written), not a crash.
 */
import { X509Certificate } from 'node:crypto';
import test from 'ava';
import { issueInWorker, issueRequestOf, type IssuePayload } from '../../domain/commands/pkiJobs.js';
import { parseCsr } from '../../shared/pki/csr.js';
import { makeCsr } from '../helpers/pki.js';
import { useStack } from '../helpers/stack.js';

const stack = useStack(test);

test('the worker certifies the Name and key it was given, byte for byte, and refuses parts that do not read', async (t) => {
  const hub = await stack.hub();
  const parts = issueRequestOf(await parseCsr(await makeCsr('/CN=parts.example.com/O=Acme')));
  const issue = (name: string, changes: Partial<IssuePayload>) =>
    issueInWorker({ hubId: hub.hubId, payload: { mode: 'create', name, validYears: 1, ...parts, ...changes } as IssuePayload, createdBy: 'test' });

  const ok = await issue('parts-ok', {});
  const row = (await stack.sql.query('SELECT subject, certificate_pem FROM client_certificates WHERE id = $1', [ok.certificateId])).rows[0];
  t.is(row.subject, 'CN=parts.example.com, O=Acme');
  const cert = new X509Certificate(row.certificate_pem);
  t.is(cert.subject, 'CN=parts.example.com\nO=Acme');
  t.true(cert.publicKey.export({ type: 'spki', format: 'der' }).equals(Buffer.from(parts.spki, 'base64')), 'the key certified is the one checked');
  t.true(cert.raw.includes(Buffer.from(parts.subjectDer, 'base64')), 'the Name certified is the bytes checked');

  const refused: [string, Partial<IssuePayload>, RegExp][] = [
    ['a Name that does not read', { subjectDer: Buffer.from('not a name').toString('base64') }, /could not be read/],
    ['a Name that is not a SEQUENCE', { subjectDer: Buffer.from([0x31, 0x00]).toString('base64') }, /could not be read \(a Name is a SEQUENCE\)/],
    [
      'a Name with bytes after it',
      { subjectDer: Buffer.concat([Buffer.from(parts.subjectDer, 'base64'), Buffer.from([0x05, 0x00])]).toString('base64') },
      /trailing data/,
    ],
    ['a key that does not read', { spki: Buffer.from([0x30, 0x03, 0x02, 0x01, 0x00]).toString('base64') }, /could not be read/],
    [
      'a key without its BIT STRING',
      { spki: Buffer.from([0x30, 0x05, 0x30, 0x03, 0x06, 0x01, 0x2a]).toString('base64') },
      /an AlgorithmIdentifier and a BIT STRING/,
    ],
    ['a key with unused bits', { spki: Buffer.from([0x30, 0x09, 0x30, 0x03, 0x06, 0x01, 0x2a, 0x03, 0x02, 0x01, 0x80]).toString('base64') }, /unused bits/],
  ];
  for (const [i, [what, changes, why]] of refused.entries()) {
    const err = (await t.throwsAsync(issue(`parts-refused-${i}`, changes), undefined, what)) as Error & { code?: string };
    t.is(err.code, 'EH_CSR_INVALID', what);
    t.regex(err.message, why, what);
  }
  const written = await stack.sql.query(`SELECT name FROM client_certificates WHERE hub_id = $1 AND name LIKE 'parts-refused-%'`, [hub.hubId]);
  t.is(written.rowCount, 0, 'nothing written for a refused job');
  const failed = await stack.sql.query(
    `SELECT status, attempts FROM executions WHERE hub_id = $1 AND type = 'pki.issueCertificate' AND status <> 'SUCCEEDED'`,
    [hub.hubId],
  );
  t.is(failed.rowCount, refused.length);
  for (const e of failed.rows) t.deepEqual([e.status, e.attempts], ['FAILED', 1], 'refused for good on the first attempt');
});
