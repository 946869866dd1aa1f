/**
 * Share and custom frontend deletes do their provider clean-up in a job written in the same transaction as the
 * delete (an execution, retried), not in the request after commit: the delete answers while no worker runs, and the
 * clean-up runs once one does.
 */
import test from 'ava';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

const stack = useStack(test);
let hub: HubFixture;
test.before(async () => {
  hub = await stack.hub();
});

const executionsOf = async (resourceId: string) =>
  (await hub.call('GET', `${hub.h}/executions?resourceId=${resourceId}&size=50`)).json.content as { type: string; status: string; createdBy: string }[];

test.serial('a share delete and a custom frontend delete enqueue their provider clean-up as executions', async (t) => {
  const frontends = await hub.call('GET', `${hub.h}/frontends`);
  const publicId = frontends.json.find((f: { publicName: string }) => f.publicName === 'public').id;
  const share = await hub.call('POST', `${hub.h}/shares`, { body: { name: 'web', frontendIds: [publicId], target: 'http://10.0.0.5:8080' } });
  t.is(share.status, 201, share.text);
  await waitFor(async () => (await hub.call('GET', `${hub.h}/shares/${share.json.zId}`)).json?.status === 'ACTIVE', { what: 'share ACTIVE' });
  const custom = await hub.call('POST', `${hub.h}/custom-frontends`, { body: { hostname: 'cleanup.example.com' } });
  t.is(custom.status, 201, custom.text);
  await waitFor(async () => (await hub.call('GET', `${hub.h}/custom-frontends/${custom.json.id}`)).json?.status === 'PENDING', { what: 'frontend PENDING' });

  // no worker: the clean-up cannot run in the request, and the deletes still answer at once
  await stack.stopWorkers();
  t.is((await hub.call('DELETE', `${hub.h}/shares/${share.json.zId}`)).status, 204);
  t.is((await hub.call('DELETE', `${hub.h}/custom-frontends/${custom.json.id}`)).status, 204);
  t.is((await hub.call('GET', `${hub.h}/shares/${share.json.zId}`)).status, 404, 'the share is gone (unpublished) at once');

  const shareCleanup = (await executionsOf(share.json.zId)).find((e) => e.type === 'shares.unpublishShare');
  t.like(shareCleanup, { status: 'QUEUED', createdBy: hub.username });
  const hostingCleanup = (await executionsOf(custom.json.id)).find((e) => e.type === 'frontends.removeHosting');
  t.like(hostingCleanup, { status: 'QUEUED' });

  await stack.startWorkers();
  for (const [id, type] of [
    [share.json.zId, 'shares.unpublishShare'],
    [custom.json.id, 'frontends.removeHosting'],
  ]) {
    await waitFor(async () => (await executionsOf(id)).find((e) => e.type === type)?.status === 'SUCCEEDED', { what: `${type} SUCCEEDED` });
  }
  t.pass();
});

test.serial('a delete of an unknown share or frontend writes no execution', async (t) => {
  const before = (await hub.call('GET', `${hub.h}/executions?size=1`)).json.totalElements;
  t.is((await hub.call('DELETE', `${hub.h}/shares/nosuchshare`)).status, 404);
  t.is((await hub.call('DELETE', `${hub.h}/custom-frontends/nosuchfrontend`)).status, 404);
  t.is((await hub.call('GET', `${hub.h}/executions?size=1`)).json.totalElements, before);
});
