/**
 * A redemption's one statement claims its execution: the runner does not mark it RUNNING first, and the execution
 * goes QUEUED -> SUCCEEDED with its attempt and its start. The claim holds only while the execution is still to run
 * and is the job's (type, payload, who asked): a job whose data is not its execution's, or that carries no copy of
 * who asked, or that comes again after the execution finished, or whose run fails, takes the usual way, where the row
 * decides and the outcome is recorded. Status
 * changes are read from a trigger this test puts on the executions table of its own database.
 */
import { X509Certificate } from 'node:crypto';
import test from 'ava';
import { issueRequestOf } from '../../domain/commands/pkiJobs.js';
import { parseCsr } from '../../shared/pki/csr.js';
import { queue } from '../../domain/jobs/queues.js';
import { makeCsr } from '../helpers/pki.js';
import { useStack, waitFor, type HubFixture } from '../helpers/stack.js';

const stack = useStack(test);

test.before(async () => {
  await stack.sql.query(`
    CREATE TABLE test_execution_transitions (id text, old_status text, new_status text, seq bigserial);
    CREATE FUNCTION test_log_transition() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF OLD.status IS DISTINCT FROM NEW.status THEN
        INSERT INTO test_execution_transitions (id, old_status, new_status) VALUES (NEW.id, OLD.status, NEW.status);
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER test_log_transition AFTER UPDATE ON executions FOR EACH ROW EXECUTE FUNCTION test_log_transition();
  `);
});

const transitions = async (id: string) =>
  (await stack.sql.query(`SELECT old_status || ' -> ' || new_status AS t FROM test_execution_transitions WHERE id = $1 ORDER BY seq`, [id])).rows.map(
    (r) => r.t,
  );
const executionRow = async (id: string) => (await stack.sql.query('SELECT * FROM executions WHERE id = $1', [id])).rows[0];

async function tokenWithJwt(hub: HubFixture, name: string) {
  const tok = await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name } });
  if (tok.status !== 201) throw new Error(`token: ${tok.status} ${tok.text}`);
  const jwt = await hub.call('GET', `${hub.h2}/certificate-request-tokens/${tok.json.id}/enrollment-jwt`);
  return { tokenId: tok.json.id as string, jwt: jwt.json.jwt as string };
}

test.serial('an enrollment claims its execution in its one statement: QUEUED -> SUCCEEDED, attempt 1, started and finished', async (t) => {
  const hub = await stack.hub();
  const { jwt } = await tokenWithJwt(hub, 'claimed');
  const enrolled = await stack.call('POST', `${hub.h2}/client-certificates/enroll`, { body: { jwt, csr: await makeCsr('/CN=claimed') } });
  t.is(enrolled.status, 201, enrolled.text);
  const row = await executionRow(enrolled.json.id);
  t.like(row, { status: 'SUCCEEDED', attempts: 1, type: 'pki.issueCertificate', created_by: 'certificate-request-token:claimed', error: null });
  t.deepEqual(row.result, { certificateId: enrolled.json.id });
  t.truthy(row.started_at);
  t.true(row.finished_at >= row.started_at);
  t.deepEqual(await transitions(enrolled.json.id), ['QUEUED -> SUCCEEDED']);

  // a certificate signed from a CSR (no token to claim with) still goes the usual way
  const signed = await hub.call('POST', `${hub.h}/client-certificates`, { body: { name: 'from-csr', value: await makeCsr('/CN=from-csr') } });
  t.is(signed.status, 201, signed.text);
  t.deepEqual(await transitions(signed.json.id), ['QUEUED -> RUNNING', 'RUNNING -> SUCCEEDED']);
});

/** An execution of a redemption as the web process writes it, held back from its job so that another job comes first. */
async function heldRedemption(hub: HubFixture, name: string) {
  const { tokenId } = await tokenWithJwt(hub, name);
  const payload = { mode: 'redeem', ...issueRequestOf(await parseCsr(await makeCsr(`/CN=${name}`))), tokenId, validYears: 1 };
  const id = `held-${name}-${Date.now()}`;
  const createdBy = `certificate-request-token:${name}`;
  await stack.sql.query(
    `INSERT INTO executions (id, process_id, hub_id, type, resource_type, status, payload, created_by) VALUES ($1, $1, $2, 'pki.issueCertificate', 'clientCertificate', 'QUEUED', $3, $4)`,
    [id, hub.hubId, JSON.stringify(payload), createdBy],
  );
  return { id, payload, createdBy };
}

const spkiOf = async (certificateId: string) => {
  const { rows } = await stack.sql.query('SELECT certificate_pem FROM client_certificates WHERE id = $1', [certificateId]);
  return new X509Certificate(rows[0].certificate_pem).publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
};

test.serial("a job whose data is not its execution's claims nothing: the execution's own data is issued, the usual way", async (t) => {
  const hub = await stack.hub();
  const held = await heldRedemption(hub, 'forged-key');
  const otherKey = issueRequestOf(await parseCsr(await makeCsr('/CN=forged-key')));
  const forged = { ...held.payload, spki: otherKey.spki, subjectDer: otherKey.subjectDer };
  const job = await queue('pki').add(
    'pki.issueCertificate',
    { executionId: held.id, hubId: hub.hubId, payload: forged, createdBy: held.createdBy },
    { jobId: held.id },
  );
  await waitFor(async () => (await job.getState()) === 'completed', { what: 'the job' });
  t.is((await executionRow(held.id)).status, 'SUCCEEDED');
  t.deepEqual(await transitions(held.id), ['QUEUED -> RUNNING', 'RUNNING -> SUCCEEDED'], 'not claimed: started by the runner');
  t.is(await spkiOf(held.id), held.payload.spki, "the execution's key is certified, not the job's");
  t.not(await spkiOf(held.id), otherKey.spki);

  // who asked, forged: the same
  const heldToo = await heldRedemption(hub, 'forged-principal');
  const other = await queue('pki').add(
    'pki.issueCertificate',
    { executionId: heldToo.id, hubId: hub.hubId, payload: heldToo.payload, createdBy: 'key:someone-else' },
    { jobId: heldToo.id },
  );
  await waitFor(async () => (await other.getState()) === 'completed', { what: 'the second job' });
  t.deepEqual(await transitions(heldToo.id), ['QUEUED -> RUNNING', 'RUNNING -> SUCCEEDED']);
  const { rows } = await stack.sql.query('SELECT created_by FROM client_certificates WHERE id = $1', [heldToo.id]);
  t.is(rows[0].created_by, heldToo.createdBy);
});

test.serial(
  'a job without a copy of who asked (added before this version) runs the usual way; a job that comes again after its execution finished changes nothing',
  async (t) => {
    const hub = await stack.hub();
    const held = await heldRedemption(hub, 'older-job');
    const job = await queue('pki').add('pki.issueCertificate', { executionId: held.id, hubId: hub.hubId, payload: held.payload }, { jobId: held.id });
    await waitFor(async () => (await job.getState()) === 'completed', { what: 'the job' });
    t.deepEqual(await transitions(held.id), ['QUEUED -> RUNNING', 'RUNNING -> SUCCEEDED']);
    t.is(await spkiOf(held.id), held.payload.spki);

    // the same execution's job again (another job id): the claim fails, the usual way finds it finished
    const again = await queue('pki').add('pki.issueCertificate', { executionId: held.id, hubId: hub.hubId, payload: held.payload, createdBy: held.createdBy });
    await waitFor(async () => (await again.getState()) === 'completed', { what: 'the repeated job' });
    t.deepEqual((await queue('pki').getJob(again.id!))!.returnvalue, { skipped: 'SUCCEEDED' });
    t.deepEqual(await transitions(held.id), ['QUEUED -> RUNNING', 'RUNNING -> SUCCEEDED'], 'nothing more');
    const { rows } = await stack.sql.query('SELECT count(*)::int AS n FROM client_certificates WHERE certificate_request_token_id = $1', [
      held.payload.tokenId,
    ]);
    t.is(rows[0].n, 1);
  },
);

test.serial("a job whose own data cannot be issued fails nothing: the execution's data is issued, the usual way", async (t) => {
  const hub = await stack.hub();
  const held = await heldRedemption(hub, 'forged-unreadable');
  const forged = { ...held.payload, subjectDer: Buffer.from('not a name').toString('base64') };
  const job = await queue('pki').add(
    'pki.issueCertificate',
    { executionId: held.id, hubId: hub.hubId, payload: forged, createdBy: held.createdBy },
    { jobId: held.id },
  );
  await waitFor(async () => (await job.getState()) === 'completed', { what: 'the job' });
  t.like(await executionRow(held.id), { status: 'SUCCEEDED', attempts: 1, error: null });
  t.deepEqual(await transitions(held.id), ['QUEUED -> RUNNING', 'RUNNING -> SUCCEEDED']);
  t.is(await spkiOf(held.id), held.payload.spki);
});

test.serial('a redemption whose token was spent meanwhile fails for good with the refusal, recorded the usual way, its attempt counted', async (t) => {
  const hub = await stack.hub();
  const held = await heldRedemption(hub, 'spent-meanwhile');
  await stack.sql.query('UPDATE certificate_request_tokens SET spent_at = now() WHERE id = $1', [held.payload.tokenId]);
  const job = await queue('pki').add(
    'pki.issueCertificate',
    { executionId: held.id, hubId: hub.hubId, payload: held.payload, createdBy: held.createdBy },
    { jobId: held.id },
  );
  await waitFor(async () => (await job.getState()) === 'failed', { what: 'the job to fail' });
  t.regex((await queue('pki').getJob(held.id))!.failedReason, /^EH_TOKEN_SPENT: /);
  const row = await executionRow(held.id);
  t.like(row, { status: 'FAILED', attempts: 1 });
  t.regex(row.error, /EH_TOKEN_SPENT/);
  t.deepEqual(await transitions(held.id), ['QUEUED -> RUNNING', 'RUNNING -> FAILED'], 'the failure recorded by the usual way, on the row');
});
