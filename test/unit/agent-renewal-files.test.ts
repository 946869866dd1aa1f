/**
 * The agent's files around a renewal: the new key waits in agent.renewal.json until the service answers; agent.crt
 * is replaced first, then agent.key. A stop between the two is finished when the identity is next read; a pending
 * renewal that has no answer yet is kept (the next attempt asks again with the same key); a pending file cut short
 * (its request never went out) is dropped.
 */
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { readIdentity } from '../../agent/lib/identity.js';
import { keyAndCsr } from '../../agent/lib/csr.js';
import { certificateOf, newAgentKey, pemOfKey, writeAgentIdentity } from '../helpers/agentIdentity.js';

const DAY = 24 * 60 * 60_000;
const validity = () => [new Date(Date.now() - DAY), new Date(Date.now() + 300 * DAY)] as const;

test('stopped between the certificate and the key: the key is put in place when the identity is read', async (t) => {
  const dir = await writeAgentIdentity(...validity());
  const next = newAgentKey();
  writeFileSync(path.join(dir, 'agent.renewal.json'), JSON.stringify({ keyPem: pemOfKey(next), csrPem: keyAndCsr({ cn: 'x' }).csrPem }));
  writeFileSync(path.join(dir, 'agent.crt'), await certificateOf(next, ...validity()));
  const identity = readIdentity(dir);
  t.is(identity.keyPem, pemOfKey(next));
  t.is(readFileSync(path.join(dir, 'agent.key'), 'utf8'), pemOfKey(next));
  t.false(existsSync(path.join(dir, 'agent.renewal.json')));
});

test('a renewal without an answer yet: the current key stays, the pending one is kept for the next attempt', async (t) => {
  const current = newAgentKey();
  const dir = await writeAgentIdentity(...validity(), current);
  const pending = JSON.stringify({ keyPem: pemOfKey(newAgentKey()), csrPem: keyAndCsr({ cn: 'x' }).csrPem });
  writeFileSync(path.join(dir, 'agent.renewal.json'), pending);
  t.is(readIdentity(dir).keyPem, pemOfKey(current));
  t.is(readFileSync(path.join(dir, 'agent.renewal.json'), 'utf8'), pending);
});

test('a pending file cut short is dropped', async (t) => {
  const current = newAgentKey();
  const dir = await writeAgentIdentity(...validity(), current);
  writeFileSync(path.join(dir, 'agent.renewal.json'), '{"keyPem": "-----BEGIN PRI');
  t.is(readIdentity(dir).keyPem, pemOfKey(current));
  t.false(existsSync(path.join(dir, 'agent.renewal.json')));
});
