import test from 'ava';
import { useStack, waitFor } from '../../helpers/stack.js';
import { assertRefused } from '../../helpers/refusals.js';

const stack = useStack(test);

test('a new hub gets its issuing CA from a worker job, recorded as an execution of the hub', async (t) => {
  const hub = await stack.hub();
  const execution = await waitFor(
    async () => {
      const r = await hub.call('GET', `${hub.h}/executions?type=pki.createHubCa&resourceId=${hub.hubId}`);
      const [e] = r.json.content;
      return e?.status === 'SUCCEEDED' ? e : undefined;
    },
    { what: 'the hub CA job' },
  );
  t.is(execution.resourceType, 'hub');
  t.is(execution.createdBy, 'admin');
  t.is(execution.error, null);
});

test('hub creation validates features and answers the operator API shape', async (t) => {
  const r = await stack.call('POST', '/admin/v1/hubs', { auth: stack.admin, body: { name: 'acme' } });
  t.is(r.status, 201);
  t.deepEqual(Object.keys(r.json).sort(), ['createdAt', 'features', 'id', 'name', 'quotas']);
  t.deepEqual(r.json.features, { ipsec: false });
  t.deepEqual(r.json.quotas, { shares: 1000, tcpPorts: 20 }, "the service's defaults");
  const bad = await stack.call('POST', '/admin/v1/hubs', { auth: stack.admin, body: { name: 'acme', features: { ipsec: true, turbo: true } } });
  assertRefused(t, bad, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.features.turbo');
});
