/**
 * Agents' certificates in revocation checking: the hub's CA issues them (enrollment, renewal), so its OCSP responder
 * answers for them and its CRL lists them once revoked. Deleting an agent or its environment revokes its certificate
 * (cessationOfOperation); a renewal revokes the one it replaces (superseded). The agents here are enrolled and renewed
 * through the API with openssl's keys; the answers are read by `openssl ocsp` and `openssl crl`.
 */
import { readFileSync } from 'node:fs';
import test from 'ava';
import { renewalProof } from '../../../agent/lib/renew.js';
import { x509Text } from '../../helpers/pki.js';
import { assertRefused } from '../../helpers/refusals.js';
import { crlText, fetchBytes, file, run } from '../../helpers/revocation.js';
import { type HubFixture, useStack, waitFor } from '../../helpers/stack.js';

const stack = useStack(test);

interface EnrolledAgent {
  id: string;
  serialNumber: string;
  leafFile: string;
  keyFile: string;
  issuingFile: string;
  rootFile: string;
}

const newKey = async () => {
  const keyFile = file('', 'key');
  await run('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', keyFile]);
  return keyFile;
};
const csrOf = async (keyFile: string) => (await run('openssl', ['req', '-new', '-key', keyFile, '-subj', '/CN=agent'])).stdout;

/** The agent's certificate and chain (as enrollment and renewal answer them) on disk, with its key. */
async function onDisk(id: string, certificate: string, keyFile: string): Promise<EnrolledAgent> {
  const [leaf, issuing, root] = certificate.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g) as string[];
  const serial = /Serial Number:\s*\n?\s*([0-9a-f:]+)/i.exec(await x509Text(leaf))?.[1] ?? '';
  return { id, serialNumber: serial.replace(/:/g, '').toLowerCase(), leafFile: file(leaf), keyFile, issuingFile: file(issuing), rootFile: file(root) };
}

/** An agent of the environment, enrolled through the API with a CSR of a fresh P-256 key. */
async function enroll(hub: HubFixture, envZId: string): Promise<EnrolledAgent> {
  const enrollment = await hub.call('POST', `${hub.h}/environments/${envZId}/agent-enrollment`, { body: {} });
  if (enrollment.status !== 201) throw new Error(`agent-enrollment: ${enrollment.status} ${enrollment.text}`);
  const keyFile = await newKey();
  const enrolled = await stack.call('POST', `/hub/v2/${hub.hubId}/agents/enroll`, { body: { jwt: enrollment.json.jwt, csr: await csrOf(keyFile) } });
  if (enrolled.status !== 201) throw new Error(`enroll: ${enrolled.status} ${enrolled.text}`);
  return onDisk(enrolled.json.id, enrolled.json.certificate, keyFile);
}

async function newEnvironment(hub: HubFixture): Promise<string> {
  const r = await hub.call('POST', `${hub.h}/environments`, { body: { description: 'private network' } });
  if (r.status !== 201) throw new Error(`environment: ${r.status} ${r.text}`);
  return r.json.envZId;
}

/** `openssl ocsp` about the agent's certificate at its hub's responder: the whole output. */
async function ocsp(hubId: string, agent: EnrolledAgent): Promise<string> {
  const args = ['ocsp', '-issuer', agent.issuingFile, '-cert', agent.leafFile, '-url', `${stack.baseUrl}/pki/${hubId}/ocsp`, '-CAfile', agent.rootFile];
  try {
    const { stdout, stderr } = await run('openssl', [...args, '-resp_text', '-no_nonce']);
    return stdout + stderr;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    return `${e.stdout ?? ''}${e.stderr ?? ''}`;
  }
}

const status = (out: string) => /: (good|revoked|unknown)\n/.exec(out)?.[1];
const crlOf = async (hubId: string) => crlText((await fetchBytes(`${stack.baseUrl}/pki/${hubId}/crl`)).body);

/** The CRL entry of `serial` with its reason, once the hub's CRL lists it (within 2 s). */
async function listed(hubId: string, serial: string): Promise<string> {
  const upper = serial.toUpperCase();
  const text = await waitFor(
    async () => {
      const crl = await crlOf(hubId);
      return crl.includes(`Serial Number: ${upper}`) && crl;
    },
    { timeoutMs: 2000, what: `serial ${upper} in the CRL` },
  );
  return (
    new RegExp(`Serial Number: ${upper}\\n\\s+Revocation Date: .*\\n\\s+CRL entry extensions:\\n\\s+X509v3 CRL Reason Code: \\n\\s+(.+)`).exec(text)?.[1] ?? ''
  );
}

/** The OCSP answer about the agent once it says revoked (within 2 s). */
const revokedAnswer = (hubId: string, agent: EnrolledAgent) =>
  waitFor(
    async () => {
      const out = await ocsp(hubId, agent);
      return status(out) === 'revoked' && out;
    },
    { timeoutMs: 2000, what: 'revoked in the OCSP answer' },
  );

test("an agent's certificate: OCSP good while the agent exists; deleting the agent revokes it (cessationOfOperation) in the OCSP answer and the CRL", async (t) => {
  const hub = await stack.hub();
  const envZId = await newEnvironment(hub);
  const agent = await enroll(hub, envZId);
  const other = await enroll(hub, envZId);
  // it names where to check it, as every certificate of the hub's CA does
  const text = await x509Text(readFileSync(agent.leafFile, 'utf8'));
  t.regex(text, new RegExp(`URI:${stack.baseUrl}/pki/${hub.hubId}/crl\\n`));
  t.regex(text, new RegExp(`OCSP - URI:${stack.baseUrl}/pki/${hub.hubId}/ocsp\\n`));

  const good = await ocsp(hub.hubId, agent);
  t.regex(good, /Response verify OK/);
  t.is(status(good), 'good', good);
  t.is(status(await ocsp(hub.hubId, other)), 'good');

  // bad input: an agent of another environment, or none: 404, and nothing is revoked
  const elsewhere = await newEnvironment(hub);
  assertRefused(t, await hub.call('DELETE', `${hub.h}/environments/${elsewhere}/agents/${agent.id}`), 404, 'not_found', 'EH_NOT_FOUND');
  assertRefused(t, await hub.call('DELETE', `${hub.h}/environments/${envZId}/agents/no-such-agent`), 404, 'not_found', 'EH_NOT_FOUND');
  t.is(status(await ocsp(hub.hubId, agent)), 'good');

  t.is((await hub.call('DELETE', `${hub.h}/environments/${envZId}/agents/${agent.id}`)).status, 204);
  const revoked = await revokedAnswer(hub.hubId, agent);
  t.regex(revoked, /Response verify OK/);
  t.regex(revoked, /Reason: cessationOfOperation\n\s+Revocation Time: /);
  t.is(await listed(hub.hubId, agent.serialNumber), 'Cessation Of Operation');
  // the other agent is untouched
  t.is(status(await ocsp(hub.hubId, other)), 'good');
  t.false((await crlOf(hub.hubId)).includes(`Serial Number: ${other.serialNumber.toUpperCase()}`));
  // deleted twice: 404, the revocation stays as it was
  assertRefused(t, await hub.call('DELETE', `${hub.h}/environments/${envZId}/agents/${agent.id}`), 404, 'not_found', 'EH_NOT_FOUND');
  t.regex(await ocsp(hub.hubId, agent), /Reason: cessationOfOperation\n/);
});

test('a renewal revokes the certificate it replaces (superseded); the new one is good', async (t) => {
  const hub = await stack.hub();
  const envZId = await newEnvironment(hub);
  const agent = await enroll(hub, envZId);
  const keyFile = await newKey();
  const csr = await csrOf(keyFile);
  const renewed = await stack.call('POST', `/hub/v2/${hub.hubId}/agents/${agent.id}/renew`, {
    body: { csr, proof: renewalProof({ id: agent.id, keyPem: readFileSync(agent.keyFile, 'utf8') } as never, csr) },
  });
  t.is(renewed.status, 200, renewed.text);
  const next = await onDisk(agent.id, renewed.json.certificate, keyFile);
  t.not(next.serialNumber, agent.serialNumber);

  const old = await revokedAnswer(hub.hubId, agent);
  t.regex(old, /Reason: superseded\n/);
  t.is(await listed(hub.hubId, agent.serialNumber), 'Superseded');
  t.is(status(await ocsp(hub.hubId, next)), 'good');
  t.false((await crlOf(hub.hubId)).includes(`Serial Number: ${next.serialNumber.toUpperCase()}`));
});

test("deleting an environment revokes its agents' certificates (cessationOfOperation); a refused delete revokes nothing", async (t) => {
  const hub = await stack.hub();
  // an environment that still hosts a share is not deleted, and its agent stays good
  const busy = await newEnvironment(hub);
  const kept = await enroll(hub, busy);
  const frontends = await hub.call('GET', `${hub.h}/frontends`);
  const share = await hub.call('POST', `${hub.h}/shares`, {
    body: { name: 'kept', frontendIds: [frontends.json[0].id], target: 'http://127.0.0.1:9', envZId: busy },
  });
  t.is(share.status, 201, share.text);
  assertRefused(t, await hub.call('DELETE', `${hub.h}/environments/${busy}`), 409, 'conflict', 'EH_ENVIRONMENT_NOT_EMPTY');
  t.is(status(await ocsp(hub.hubId, kept)), 'good');

  const envZId = await newEnvironment(hub);
  const [a, b] = [await enroll(hub, envZId), await enroll(hub, envZId)];
  t.is(status(await ocsp(hub.hubId, a)), 'good');
  t.is((await hub.call('DELETE', `${hub.h}/environments/${envZId}`)).status, 204);
  for (const agent of [a, b]) {
    t.regex(await revokedAnswer(hub.hubId, agent), /Reason: cessationOfOperation\n/);
    t.is(await listed(hub.hubId, agent.serialNumber), 'Cessation Of Operation');
  }
  t.is(status(await ocsp(hub.hubId, kept)), 'good');
  t.false((await crlOf(hub.hubId)).includes(`Serial Number: ${kept.serialNumber.toUpperCase()}`));
});
