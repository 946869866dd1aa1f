import test from 'ava';
import { useStack } from '../../helpers/stack.js';
import { assertRefused } from '../../helpers/refusals.js';

const stack = useStack(test, { workers: false });

test('create and list environments under both prefixes', async (t) => {
  const hub = await stack.hub();
  const created = await hub.call('POST', `${hub.h}/environments`, { body: { description: 'laptop' } });
  t.is(created.status, 201);
  t.regex(created.json.envZId, /^[a-z0-9]{12}$/);
  t.is(created.json.hubId, hub.hubId);
  t.is(created.json.description, 'laptop');
  t.truthy(Date.parse(created.json.createdAt));
  const list = await hub.call('GET', `${hub.h2}/environments`, { auth: hub.basic });
  t.is(list.status, 200);
  t.deepEqual(
    list.json.content.map((e: any) => e.envZId),
    [created.json.envZId],
  );
  const one = await hub.call('GET', `${hub.h}/environments/${created.json.envZId}`);
  t.is(one.json.description, 'laptop');
  const empty = await hub.call('POST', `${hub.h}/environments`);
  t.is(empty.status, 201, 'description is optional');
});

test('environments of another hub are invisible', async (t) => {
  const a = await stack.hub();
  const b = await stack.hub();
  const env = await b.call('POST', `${b.h}/environments`, { body: { description: 'b' } });
  t.is((await a.call('GET', `${a.h}/environments/${env.json.envZId}`)).status, 404);
  t.is((await a.call('GET', `${a.h}/environments`)).json.totalElements, 0);
  t.is((await a.call('POST', `${b.h}/environments`, { body: { description: 'x' } })).status, 403);
});

test('DELETE an environment: only one that hosts nothing; the default one stays; 409 while it hosts a share', async (t) => {
  const hub = await stack.hub();
  const empty = await hub.call('POST', `${hub.h}/environments`, { body: { description: 'spare' } });
  const other = await stack.hub();
  t.is((await other.call('DELETE', `${other.h}/environments/${empty.json.envZId}`)).status, 404, "another hub's key");
  t.is((await hub.call('DELETE', `${hub.h}/environments/${empty.json.envZId}`)).status, 204);
  t.is((await hub.call('GET', `${hub.h}/environments/${empty.json.envZId}`)).status, 404);
  t.is((await hub.call('DELETE', `${hub.h}/environments/${empty.json.envZId}`)).status, 404);

  const used = await hub.call('POST', `${hub.h}/environments`, { body: { description: 'used' } });
  const frontends = await hub.call('GET', `${hub.h}/frontends`);
  const share = await hub.call('POST', `${hub.h}/shares`, {
    body: { name: 'x', frontendIds: [frontends.json[0].id], target: 'http://127.0.0.1:9', envZId: used.json.envZId },
  });
  t.is(share.status, 201, share.text);
  const busy = await hub.call('DELETE', `${hub.h}/environments/${used.json.envZId}`);
  assertRefused(t, busy, 409, 'conflict', 'EH_ENVIRONMENT_NOT_EMPTY', '1 share');
  // a share without envZId makes the hub's default environment, which cannot be deleted
  const inDefault = await hub.call('POST', `${hub.h}/shares`, { body: { name: 'y', frontendIds: [frontends.json[0].id], target: 'http://127.0.0.1:9' } });
  const refused = await hub.call('DELETE', `${hub.h}/environments/${inDefault.json.envZId}`);
  assertRefused(t, refused, 400, 'invalid_request', 'EH_DEFAULT_ENVIRONMENT');
});
