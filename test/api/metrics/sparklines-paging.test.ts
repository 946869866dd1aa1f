/** Sparklines carry at most HUB_SPARKLINES_MAX_SHARES shares per response, say so, and page through the rest. */
import test from 'ava';
import { useStack } from '../../helpers/stack.js';
import { assertSeries, environment, get, HOUR, sampleMaker } from '../../helpers/usage.js';
import { assertRefused } from '../../helpers/refusals.js';

const stack = useStack(test, { workers: false, env: { HUB_SPARKLINES_MAX_SHARES: '3' } });

test('sparklines are capped per response, the cap is stated, and pages cover every share once', async (t) => {
  const hub = await stack.hub();
  const env = await environment(hub);
  const frontendId = (await get(hub, `${hub.h}/frontends`))[0].id;
  const shares: string[] = [];
  for (let i = 0; i < 7; i++) {
    const r = await hub.call('POST', `${hub.h}/shares`, { body: { name: `s${i}`, frontendIds: [frontendId], target: 'http://10.0.0.5:8080', envZId: env } });
    t.is(r.status, 201, r.text);
    shares.push(r.json.zId);
  }
  const { samplesOf } = sampleMaker(5);
  const samples = shares.flatMap((shareId) => samplesOf({ hubId: hub.hubId, shareId }, 20, 600));
  t.is((await stack.call('POST', '/admin/v1/usage', { auth: stack.admin, body: { samples } })).status, 202);

  const first = await get(hub, `${hub.h}/sparklines`);
  t.is(first.sparklines.length, 3, 'capped at HUB_SPARKLINES_MAX_SHARES');
  t.is(first.maxPageSize, 3);
  t.deepEqual(first.pageable, { pageNumber: 0, pageSize: 3 });
  t.is(first.totalElements, 7);
  t.is(first.totalPages, 3);

  const seen: string[] = [];
  for (let page = 0; page < 3; page++) {
    const body = await get(hub, `${hub.h2}/metrics/sparklines?duration=P1D&page=${page}`);
    for (const line of body.sparklines) {
      seen.push(line.id);
      assertSeries(
        t,
        line.samples,
        samples.filter((s) => s.shareId === line.id),
        HOUR,
        `share ${line.id} on page ${page}`,
      );
    }
  }
  t.deepEqual(seen, shares, 'every share once, in creation order');
  const small = await get(hub, `${hub.h}/sparklines?size=2&page=3`);
  t.deepEqual(
    small.sparklines.map((s: { id: string }) => s.id),
    [shares[6]],
  );
  t.is(small.totalPages, 4);
  t.deepEqual((await get(hub, `${hub.h}/sparklines?page=5`)).sparklines, [], 'a page past the end is empty');

  // each refusal names the query parameter (and the limit)
  for (const [query, names] of [
    ['size=4', ["'size'", 'at most 3']],
    ['size=x', ["'size'"]],
    ['page=-1', ["'page'"]],
  ] as const) {
    assertRefused(t, await hub.call('GET', `${hub.h}/sparklines?${query}`), 400, 'invalid_request', 'EH_INVALID_REQUEST', [...names]);
  }
});
