/**
 * Every request body is strict: an unknown property is a 400 `invalid_request` naming it (a typo of a security
 * setting, `{"mtls": true}`, must never make a public share). Table-driven over every operation the OpenAPI
 * document lists with a body; the API's documented bodies, aliases included, are still accepted.
 */
import test from 'ava';
import { operations } from '../../../api/openapi/operations.js';
import { type HubFixture, useStack, waitFor } from '../../helpers/stack.js';
import { assertRefused } from '../../helpers/refusals.js';

const stack = useStack(test);
let hub: HubFixture;

test.before(async () => {
  hub = await stack.hub({ ipsec: true });
});

/** The request path of an operation: the hub's prefix for hub routes, ids that exist nowhere for path parameters. */
function pathOf(path: string, scope: string): string {
  const concrete = path
    .replace(/\\:/g, ':')
    .replace(/:(hubId)\b/g, hub.hubId)
    .replace(/:[A-Za-z]+/g, 'no-such-id');
  return scope === 'hub' ? `${hub.h2}${concrete}` : concrete;
}

test.serial('an unknown property is a 400 naming it, on every operation with a body', async (t) => {
  const withBody = operations.filter((o) => o.body);
  t.true(withBody.length >= 20, `${withBody.length} operations with a body`);
  let checked = 0;
  for (const op of withBody) {
    const path = pathOf(Array.isArray(op.path) ? op.path[0] : op.path, op.scope);
    const auth = op.scope === 'admin' ? stack.admin : op.scope === 'open' ? undefined : hub.bearer;
    const r = await stack.call(op.method.toUpperCase(), path, { auth, body: { mtls: true, name: 'x' }, contract: false });
    // a path naming nothing may answer 404 before the body is read; everything else must refuse the unknown field
    if (r.status === 404) continue;
    assertRefused(t, r, 400, 'invalid_request', 'EH_INVALID_REQUEST', "'$.mtls'");
    checked++;
  }
  t.true(checked >= 12, `${checked} operations refused the unknown field`);
});

test.serial('several unknown properties are all named; nothing is written', async (t) => {
  const before = (await hub.call('GET', `${hub.h}/environments`)).json.totalElements;
  const r = await hub.call('POST', `${hub.h}/environments`, { body: { description: 'x', colour: 'red', mtls: true } });
  assertRefused(t, r, 400, 'invalid_request', 'EH_INVALID_REQUEST', ["'$.colour'", "'$.mtls'"]);
  t.is((await hub.call('GET', `${hub.h}/environments`)).json.totalElements, before);
});

test.serial("the API's documented bodies are accepted, aliases included", async (t) => {
  const env = await hub.call('POST', `${hub.h}/environments`, { body: { description: 'site' } });
  t.is(env.status, 201);
  const frontends = await hub.call('GET', `${hub.h}/frontends`);
  const share = await hub.call('POST', `${hub.h}/shares`, { body: { name: 'web', frontendIds: [frontends.json[0].id], target: 'http://127.0.0.1:9' } });
  t.is(share.status, 201, share.text);
  const tunnel = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: { name: 'office', peerPublicIp: '203.0.113.20', peerCidr: '192.168.60.0/24' } });
  t.is(tunnel.status, 202, tunnel.text);
  await waitFor(async () => (await hub.call('GET', `${hub.h2}/ipsec-tunnels/${tunnel.json.id}`)).json.status === 'DEPLOYED', { what: 'tunnel DEPLOYED' });
  // envId: the documented alias of envZId
  const ipsecShare = await hub.call('POST', `${hub.h2}/ipsec-shares`, {
    body: { name: 'db', ipsecTunnelId: tunnel.json.id, envId: env.json.envZId, target: 'db.internal:5432', ingressPort: 5432 },
  });
  t.is(ipsecShare.status, 202, ipsecShare.text);
  const token = await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name: 'laptop', commonName: 'laptop', validYears: 1 } });
  t.is(token.status, 201, token.text);
});
