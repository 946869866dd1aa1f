/**
 * An issuance job carries the parts of a CSR the web process verified (its subject Name and key as encoded, and the
 * subject as text), not the CSR: the worker certifies those bytes without parsing a CSR again. What it still checks:
 * the subject text stored beside the certificate is the Name it certifies, and parts that do not read are a refusal
 * for good (no retry, nothing written), not a crash.
 */
import { X509Certificate } from 'node:crypto';
import test from 'ava';
import { issueInWorker, issueRequestOf, type IssuePayload } from '../../shared/commands/pkiJobs.js';
import { parseCsr } from '../../shared/pki/csr.js';
import { makeCsr } from '../helpers/pki.js';
import { useStack } from '../helpers/stack.js';

const stack = useStack(test);

test('the worker certifies the Name and key it was given, and refuses parts that disagree or do not read', async (t) => {
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

  const refused: [string, Partial<IssuePayload>, RegExp][] = [
    ['a subject text that is not the Name', { subject: 'CN=someone-else.example.com, O=Acme' }, /is not the subject that was checked/],
    ['a Name that does not read', { subjectDer: Buffer.from('not a name').toString('base64') }, /could not be read/],
    ['a key that does not read', { spki: Buffer.from([0x30, 0x03, 0x02, 0x01, 0x00]).toString('base64') }, /could not be read/],
  ];
  for (const [i, [what, changes, why]] of refused.entries()) {
    const err = (await t.throwsAsync(issue(`parts-refused-${i}`, changes), undefined, what)) as Error & { code?: string };
    t.is(err.code, 'EH_CSR_INVALID', what);
    t.regex(err.message, why, what);
  }
  const written = await stack.sql.query(`SELECT name FROM client_certificates WHERE hub_id = $1 AND name LIKE 'parts-refused-%'`, [hub.hubId]);
  t.is(written.rowCount, 0, 'nothing written for a refused job');
  const failed = await stack.sql.query(`SELECT status, attempts FROM executions WHERE hub_id = $1 AND type = 'pki.issueCertificate' AND status <> 'SUCCEEDED'`, [hub.hubId]);
  t.is(failed.rowCount, refused.length);
  for (const e of failed.rows) t.deepEqual([e.status, e.attempts], ['FAILED', 1], 'refused for good on the first attempt');
});
