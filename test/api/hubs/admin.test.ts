/**
 * The operator's lists and deletion (the operator API): GET /admin/v1/hubs (paged), GET .../api-keys (never
 * the tokens), DELETE /admin/v1/hubs/{hubId}: the hub and everything in it go in one statement; its keys answer 401
 * at once, its shares stop answering at the edge, its IPsec records are released, and the workers carry on.
 */
import test from 'ava';
import { edgeRequest, routedShare, useBackend, useTestEdge } from '../../helpers/edge.js';
import { useStack, waitFor } from '../../helpers/stack.js';

const stack = useStack(test);
const backend = useBackend(test, stack, (_req, res) => res.end('hello'));
const edge = useTestEdge(test, stack);

const admin = (method: string, path: string, body?: unknown) => stack.call(method, path, { auth: stack.admin, body });

test.serial('GET /admin/v1/hubs pages and sorts the hubs; bad parameters are 400; the hub API refuses it', async (t) => {
  const names = ['list-c', 'list-a', 'list-b'];
  const made = [];
  for (const name of names) made.push((await admin('POST', '/admin/v1/hubs', { name })).json);
  const all = await admin('GET', '/admin/v1/hubs?size=1000&sort=name,asc');
  t.is(all.status, 200);
  const listed = all.json.content.map((h: { name: string }) => h.name).filter((n: string) => n.startsWith('list-'));
  t.deepEqual(listed, ['list-a', 'list-b', 'list-c']);
  t.true(all.json.totalElements >= 3);
  const page = await admin('GET', '/admin/v1/hubs?size=2&page=0&sort=createdAt,desc');
  t.is(page.json.content.length, 2);
  t.is(page.json.pageable.pageSize, 2);
  t.is((await admin('GET', '/admin/v1/hubs?sort=secret')).status, 400);
  t.is((await admin('GET', '/admin/v1/hubs?size=0')).status, 400);
  const hub = await stack.hub();
  t.is((await hub.call('GET', '/admin/v1/hubs')).status, 403, 'an API key is not the admin token');
  t.is((await stack.call('GET', '/admin/v1/hubs')).status, 401);
});

test.serial('GET /admin/v1/hubs/{hubId}/api-keys lists keys with revocations, never a token; 404 for an unknown hub', async (t) => {
  const hub = await stack.hub();
  const second = await admin('POST', `/admin/v1/hubs/${hub.hubId}/api-keys`, { name: 'second' });
  await admin('DELETE', `/admin/v1/hubs/${hub.hubId}/api-keys/${second.json.id}`);
  const keys = await admin('GET', `/admin/v1/hubs/${hub.hubId}/api-keys`);
  t.is(keys.status, 200);
  t.deepEqual(
    keys.json.map((k: { name: string }) => k.name),
    ['test', 'second'],
  );
  t.truthy(keys.json[1].revokedAt);
  t.false(keys.text.includes(hub.token), 'no token string');
  t.true(keys.json.every((k: Record<string, unknown>) => !('token' in k)));
  const missing = await admin('GET', '/admin/v1/hubs/nope/api-keys');
  t.is(missing.status, 404);
  t.is(missing.json.error, 'not_found');
});

test.serial('DELETE /admin/v1/hubs/{hubId}: keys 401 at once, shares gone from the edge, IPsec released, nothing left; 404 after', async (t) => {
  const hub = await stack.hub({ ipsec: true });
  const { host } = await routedShare(edge, hub, { target: backend.url });
  t.is((await edgeRequest(edge.httpPort!, host)).text, 'hello');
  const tunnel = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: { name: 'office', peerPublicIp: '203.0.113.9', peerCidr: '192.168.50.0/24' } });
  await waitFor(async () => (await hub.call('GET', `${hub.h2}/ipsec-tunnels/${tunnel.json.id}`)).json.status === 'DEPLOYED', { what: 'tunnel DEPLOYED' });
  // a job in flight for the hub when it goes
  await hub.call('POST', `${hub.h}/environments`, { body: { description: 'x' } });
  await hub.call('POST', `${hub.h2}/ipsec-tunnels`, {
    body: { name: 'branch', peerPublicIp: '203.0.113.10', peerCidr: '192.168.51.0/24', locationId: 'branch' },
  });

  const deleted = await admin('DELETE', `/admin/v1/hubs/${hub.hubId}`);
  t.is(deleted.status, 204);
  t.is((await hub.call('GET', `${hub.h}/environments`)).status, 401, 'its key stops working at once');
  await waitFor(async () => (await edgeRequest(edge.httpPort!, host)).status === 404, { timeoutMs: 2000, what: 'the share gone from the edge within 2 s' });
  t.is((await admin('GET', `/admin/v1/hubs/${hub.hubId}`)).status, 404);
  t.is((await admin('DELETE', `/admin/v1/hubs/${hub.hubId}`)).status, 404);

  // nothing of the hub is left; its IPsec records are released for others
  const { default: pg } = await import('pg');
  const db = new pg.Client({ connectionString: stack.databaseUrl });
  await db.connect();
  try {
    for (const table of ['api_keys', 'environments', 'shares', 'executions', 'ipsec_tunnels', 'certificate_authorities']) {
      const { rows } = await db.query(`SELECT count(*)::int AS n FROM ${table} WHERE hub_id = $1`, [hub.hubId]);
      t.is(rows[0].n, 0, table);
    }
    const live = await db.query(`SELECT count(*)::int AS n FROM ipsec_local_tunnels WHERE tunnel_id = $1 AND released_at IS NULL`, [tunnel.json.id]);
    t.is(live.rows[0].n, 0, 'the tunnel records released');
  } finally {
    await db.end();
  }

  // the workers carry on: another hub's work still runs
  const other = await stack.hub({ ipsec: true });
  const next = await other.call('POST', `${other.h2}/ipsec-tunnels`, { body: { name: 'next', peerPublicIp: '203.0.113.11', peerCidr: '192.168.52.0/24' } });
  await waitFor(async () => (await other.call('GET', `${other.h2}/ipsec-tunnels/${next.json.id}`)).json.status === 'DEPLOYED', {
    what: "another hub's tunnel DEPLOYED",
  });
  t.pass();
});
