import test from 'ava';
import { edgeRequest, routedShare, useBackend, useTestEdge } from '../helpers/edge.js';
import { type HubFixture, useStack } from '../helpers/stack.js';
import { assertRefused } from '../helpers/refusals.js';

// loopback is denied here, so the targets below can be denied without any traffic leaving the machine
const stack = useStack(test, { env: { HUB_EGRESS_DENY: '127.0.0.1/32, ::1/128' } });
const backend = useBackend(test, stack, (_req, res) => {
  requests++;
  res.end('reached');
});
const edge = useTestEdge(test, stack);
let hub: HubFixture;
let requests = 0;

test.before(async () => {
  hub = await stack.hub();
});

test('the edge answers 403 for a denied target: an IP literal, an IPv4-mapped IPv6 literal, and a name that resolves to a denied address', async (t) => {
  for (const target of [backend.url, `http://[::ffff:127.0.0.1]:${backend.port}`, `http://localhost:${backend.port}`]) {
    const { host } = await routedShare(edge, hub, { target });
    const r = await edgeRequest(edge.httpPort!, host);
    assertRefused(t, r, 403, 'forbidden', 'EH_EGRESS_DENIED');
    t.regex(r.json.message, /\((127\.0\.0\.1\/32|::1\/128)\)/, `${target}: names the rule that denied it (the point of this test)`);
  }
  // over a WebSocket upgrade too
  const { host } = await routedShare(edge, hub, { target: backend.url });
  const upgrade = await edgeRequest(edge.httpPort!, host, { headers: { connection: 'Upgrade', upgrade: 'websocket' } });
  assertRefused(t, upgrade, 403, 'forbidden', 'EH_EGRESS_DENIED');
  t.is(requests, 0, 'no request reached the denied target');
});

test('a health check of a denied target is ERROR with a clear message, for execute and test alike', async (t) => {
  const created = await hub.call('POST', `${hub.h}/health-checks`, {
    body: { name: 'denied', method: 'GET', path: '/', expectedStatus: 200, target: `http://localhost:${backend.port}` },
  });
  t.is(created.status, 201, created.text);
  const executed = await hub.call('POST', `${hub.h}/health-checks/${created.json.id}:execute`);
  t.is(executed.status, 200);
  t.like(executed.json, { result: 'ERROR', status: null });
  t.regex(executed.json.message, /denied by the egress policy/);
  const tested = await hub.call('POST', `${hub.h}/health-checks/${created.json.id}:test`, { body: { target: backend.url } });
  t.like(tested.json, { result: 'ERROR' }, tested.text);
  t.regex(tested.json.message, /127\.0\.0\.1.*denied/);
  t.is(requests, 0);
});

test('HUB_EGRESS_DENY must be a list of CIDRs', async (t) => {
  const { loadConfig } = await import('../../shared/config.js');
  t.throws(() => loadConfig({ ...process.env, HUB_EGRESS_DENY: '169.254.0.0/16,not-a-cidr' }), { message: /HUB_EGRESS_DENY: 'not-a-cidr'/ });
});

test('0.0.0.0/8 and [::] connect to this host, so they are denied wherever loopback is', async (t) => {
  for (const target of [`http://0.0.0.0:${backend.port}`, `http://0.1.2.3:${backend.port}`, `http://[::]:${backend.port}`]) {
    const { host } = await routedShare(edge, hub, { target });
    const r = await edgeRequest(edge.httpPort!, host);
    assertRefused(t, r, 403, 'forbidden', 'EH_EGRESS_DENIED');
  }
  t.is(requests, 0);
});

test("login: the identity provider's discovery goes through the egress policy", async (t) => {
  const provider = await hub.call('POST', `${hub.h}/auth-providers`, {
    body: {
      name: 'denied-idp',
      type: 'OIDC',
      config: { clientId: 'c', clientSecret: 's', issuerUrl: `http://127.0.0.1:${backend.port}` },
      emailPatterns: ['*@example.com'],
    },
  });
  t.is(provider.status, 201, provider.text);
  const { host } = await routedShare(edge, hub, { target: 'http://203.0.113.10', authProviderId: provider.json.id });
  const r = await edgeRequest(edge.httpPort!, host, { headers: { accept: 'text/html' } });
  assertRefused(t, r, 502, 'bad_gateway', 'EH_IDP_UNREACHABLE', '(EH_EGRESS_DENIED)'); // names the cause by its published code
  t.is(requests, 0, 'the denied identity provider was never contacted');
});
