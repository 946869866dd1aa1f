/**
 * 403 says `forbidden`, except where the public API answers "no access" and "no such hub" alike with `not_found` (an
 * invalid token, a token without access to the resource, an unknown hub, a real certificate enrollment with an
 * expired, spent or other-hub JWT), so that a caller learns nothing of other hubs.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { edgehubCli, newEnvironment } from '../../helpers/agents.js';
import { useStack } from '../../helpers/stack.js';

const stack = useStack(test);

test("a hub's API key on the operator API is 403 forbidden", async (t) => {
  const hub = await stack.hub();
  for (const [method, route, body] of [
    ['GET', '/admin/v1/hubs', undefined],
    ['POST', '/admin/v1/hubs', { name: 'x' }],
    ['GET', `/admin/v1/hubs/${hub.hubId}`, undefined],
    ['POST', '/admin/v1/signing-keys:rotate', undefined],
  ] as const) {
    const r = await stack.call(method, route, { auth: hub.bearer, body });
    t.is(r.status, 403, route);
    t.deepEqual(r.json, { error: 'forbidden', message: 'the operator API needs the admin token' }, route);
  }
});

test('a refused agent enrollment JWT (forged, of another hub, spent) is 403 forbidden', async (t) => {
  const hub = await stack.hub();
  const other = await stack.hub();
  const envZId = await newEnvironment(hub);
  const enrollment = await hub.call('POST', `${hub.h}/environments/${envZId}/agent-enrollment`, { body: {} });
  t.is(enrollment.status, 201);
  const jwt: string = enrollment.json.jwt;
  const forged = await stack.call('POST', `/hub/v2/${hub.hubId}/agents/enroll`, { body: { jwt: jwt.slice(0, -4) + 'AAAA', csr: 'x' } });
  t.is(forged.status, 403);
  t.is(forged.json.error, 'forbidden');
  const wrongHub = await stack.call('POST', `/hub/v2/${other.hubId}/agents/enroll`, { body: { jwt, csr: 'x' } });
  t.is(wrongHub.status, 403);
  t.is(wrongHub.json.error, 'forbidden');
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'agent-'));
  const enrolled = await edgehubCli(['agent', 'enroll', jwt, '--dir', dir]);
  t.is(enrolled.code, 0, enrolled.stderr);
  const spent = await stack.call('POST', `/hub/v2/${hub.hubId}/agents/enroll`, { body: { jwt, csr: 'x' } });
  t.is(spent.status, 403);
  t.deepEqual(spent.json, { error: 'forbidden', message: 'this agent enrollment JWT was already used' });
});

test("the public API's own cases stay 403 not_found: another hub's key, an unknown hub, the admin token on an account route", async (t) => {
  const hub = await stack.hub();
  const other = await stack.hub();
  for (const [auth, route] of [
    [hub.bearer, `${other.h}/environments`],
    [hub.bearer, '/hub/no-such-hub/environments'],
    [stack.admin, '/hub/no-such-hub/environments'],
    [stack.admin, '/account/frontends'],
  ] as const) {
    const r = await stack.call('GET', route, { auth });
    t.is(r.status, 403, route);
    t.is(r.json.error, 'not_found', route);
  }
});
