/**
 * An agent renews its certificate itself, while it runs, once a third of its validity is left (here the validity is
 * two minutes, so at once): a new key, a CSR, and a proof signed by its current key, POSTed to
 * `/hub/v2/{hubId}/agents/{id}/renew`. The agents here run on this host (they reach the service on its loopback
 * address, as their enrollment gave it). The edge then admits the new certificate and no longer the old one; the
 * connection that was open goes on. The endpoint's refusals: a proof by another key, for another agent, for another
 * CSR, or stale; a revoked or unknown agent; a bad body or key; and a retry of a renewal that went through gets the
 * certificate already issued.
 */
import { createHash, createPublicKey, generateKeyPairSync, X509Certificate } from 'node:crypto';
import { cpSync, readFileSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { readIdentity } from '../../agent/lib/identity.js';
import { keyAndCsr } from '../../agent/lib/csr.js';
import { renewalProof } from '../../agent/lib/renew.js';
import { edgeRequest, routedShare, startBackend, type Backend } from '../helpers/edge.js';
import { enrollAgent, newEnvironment } from '../helpers/agents.js';
import { useAgentBench } from '../helpers/agentBench.js';
import { makeCsr } from '../helpers/pki.js';
import { assertRefused } from '../helpers/refusals.js';
import { waitFor } from '../helpers/stack.js';

const bench = useAgentBench(test, { HUB_AGENT_CERT_VALIDITY: 'PT2M' });
const { stack, work } = bench;
const RENEW_EVERY = { EDGEHUB_AGENT_RENEW_CHECK_MS: '1000' };

const fingerprintOf = (pem: string) => createHash('sha256').update(new X509Certificate(pem).raw).digest('hex');
const spkiOf = (pem: string) => new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
const renewPath = (agentId: string) => `/hub/v2/${bench.hub.hubId}/agents/${agentId}/renew`;

let backend: Backend;
test.before(async () => {
  backend = await startBackend((_req, res) => res.end('A'));
});
test.after.always(async () => {
  await backend?.close();
});

test.serial('a running agent renews its certificate; the edge admits the new one and refuses the old one', async (t) => {
  const envZId = await newEnvironment(bench.hub);
  // the agent runs on this host here: it reaches the service on its loopback address, and this target
  const { host } = await routedShare(bench.edge, bench.hub, { target: backend.url, envZId });
  const { dir, id } = await enrollAgent(bench.hub, envZId, work);
  const before = readIdentity(dir);
  const old = path.join(work, 'old-identity');
  cpSync(dir, old, { recursive: true });

  const agent = bench.agentHere(dir, RENEW_EVERY);
  await agent.printed(/connected to edge/);
  const line = await agent.printed(/renewed the certificate of agent/, 20_000);
  t.regex(line, new RegExp(`renewed the certificate of agent ${id}: valid until \\S+`));
  const after = readIdentity(dir);
  t.not(spkiOf(after.certificatePem), spkiOf(before.certificatePem), 'a new key');
  t.not(after.keyPem, before.keyPem);
  // the key on disk is the one the certificate certifies (with a validity this short the agent renews again every
  // check, so a next renewal's pending file may already be there: test/unit/agent-renewal-files.test.ts covers it)
  t.is(createPublicKey(after.keyPem).export({ type: 'spki', format: 'der' }).toString('base64'), spkiOf(after.certificatePem), 'the key matches');
  // valid for the whole validity from the renewal (the same second as the enrollment, on a fast machine)
  t.true(Date.parse(new X509Certificate(after.certificatePem).validTo) >= Date.parse(new X509Certificate(before.certificatePem).validTo));
  const { rows } = await stack.sql.query('SELECT fingerprint_sha256 FROM agents WHERE id = $1', [id]);
  t.is(rows[0].fingerprint_sha256, fingerprintOf(after.certificatePem), 'the edge is told of the new certificate');
  // the connection made with the old certificate goes on
  t.is((await edgeRequest(bench.edge.httpPort!, host, { path: '/whoami' })).text, 'A');

  // restarted, it connects with the new certificate and serves
  await agent.stop('SIGKILL');
  const again = bench.agentHere(dir);
  await again.printed(/connected to edge/);
  await waitFor(async () => (await edgeRequest(bench.edge.httpPort!, host, { path: '/whoami' })).text === 'A', { what: 'served with the new certificate' });
  // the old certificate admits nothing any more
  const stale = bench.agentHere(old);
  await stale.printed(/cannot connect to edge .*the edge closed the connection/, 15_000);
  t.pass();
});

test.serial(
  'renewal refusals: another key, another agent, another CSR, stale, unknown or revoked agent, bad input; a retry gets the same certificate',
  async (t) => {
    const envZId = await newEnvironment(bench.hub);
    const { dir, id } = await enrollAgent(bench.hub, envZId, work);
    const identity = readIdentity(dir);
    const { csrPem } = keyAndCsr({ cn: 'renewal' });
    const call = (agentId: string, body: unknown) => stack.call('POST', renewPath(agentId), { body });

    // a proof by a key that is not the agent's
    const stranger = { ...identity, keyPem: generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
    assertRefused(t, await call(id, { csr: csrPem, proof: renewalProof(stranger, csrPem) }), 403, 'forbidden', 'EH_AGENT_PROOF_INVALID');
    // the agent's own proof, for another agent of the hub
    const other = await enrollAgent(bench.hub, envZId, work);
    assertRefused(t, await call(other.id, { csr: csrPem, proof: renewalProof(identity, csrPem) }), 403, 'forbidden', 'EH_AGENT_PROOF_INVALID');
    // for another CSR than the one sent
    assertRefused(t, await call(id, { csr: csrPem, proof: renewalProof(identity, keyAndCsr({ cn: 'x' }).csrPem) }), 403, 'forbidden', 'EH_AGENT_PROOF_INVALID');
    // stale: signed ten minutes ago
    const realNow = Date.now;
    Date.now = () => realNow() - 10 * 60_000;
    const stale = renewalProof(identity, csrPem);
    Date.now = realNow;
    assertRefused(t, await call(id, { csr: csrPem, proof: stale }), 403, 'forbidden', 'EH_AGENT_PROOF_INVALID');
    // dated ahead of the service's clock by more than clock skew (55 s): refused; a few seconds ahead is skew, below
    Date.now = () => realNow() + 55_000;
    const ahead = renewalProof(identity, csrPem);
    Date.now = realNow;
    const aheadAnswer = await call(id, { csr: csrPem, proof: ahead });
    assertRefused(t, aheadAnswer, 403, 'forbidden', 'EH_AGENT_PROOF_INVALID');
    t.regex(aheadAnswer.json.message, /iat/);
    // an agent that does not exist
    assertRefused(t, await call('no-such-agent', { csr: csrPem, proof: renewalProof(identity, csrPem) }), 403, 'forbidden', 'EH_AGENT_PROOF_INVALID');
    // bad input: no proof, a key that is not P-256
    assertRefused(t, await call(id, { csr: csrPem }), 400, 'invalid_request', 'EH_INVALID_REQUEST');
    const rsa = await makeCsr('/CN=rsa', 'rsa2048');
    assertRefused(t, await call(id, { csr: rsa, proof: renewalProof(identity, rsa) }), 400, 'invalid_request', 'EH_CSR_INVALID');

    // the right proof renews (dated 3 s ahead: clock skew is tolerated); the same request again (its answer lost) gets
    // the same certificate, once
    Date.now = () => realNow() + 3_000;
    const skewed = renewalProof(identity, csrPem);
    Date.now = realNow;
    const renewed = await call(id, { csr: csrPem, proof: skewed });
    t.is(renewed.status, 200, renewed.text);
    t.is(renewed.json.id, id);
    const retried = await call(id, { csr: csrPem, proof: renewalProof(identity, csrPem) });
    t.is(retried.status, 200, retried.text);
    t.is(retried.json.certificate, renewed.json.certificate);
    // the old key's proof for a new CSR no longer counts: the agent's key is the new one now
    const next = keyAndCsr({ cn: 'next' }).csrPem;
    assertRefused(t, await call(id, { csr: next, proof: renewalProof(identity, next) }), 403, 'forbidden', 'EH_AGENT_PROOF_INVALID');

    // revoked: refused like an unknown agent
    t.is((await bench.hub.call('DELETE', `${bench.hub.h}/environments/${envZId}/agents/${other.id}`)).status, 204);
    const otherIdentity = readIdentity(other.dir);
    assertRefused(t, await call(other.id, { csr: next, proof: renewalProof(otherIdentity, next) }), 403, 'forbidden', 'EH_AGENT_PROOF_INVALID');
    // and an agent of another hub cannot renew through this one
    const elsewhere = await stack.hub({ name: 'elsewhere' });
    assertRefused(
      t,
      await stack.call('POST', `/hub/v2/${elsewhere.hubId}/agents/${id}/renew`, { body: { csr: next, proof: renewalProof(identity, next) } }),
      403,
      'forbidden',
      'EH_AGENT_PROOF_INVALID',
    );
    t.is(readFileSync(path.join(dir, 'agent.key'), 'utf8'), identity.keyPem, 'the identity on disk was not touched by these calls');
  },
);
