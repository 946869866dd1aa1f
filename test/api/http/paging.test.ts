import test from 'ava';
import { type HubFixture, useStack } from '../../helpers/stack.js';

const stack = useStack(test, { workers: false });
let hub: HubFixture;
let other: HubFixture;
test.before(async () => {
  hub = await stack.hub();
  other = await stack.hub();
  for (let i = 0; i < 25; i++) {
    const r = await hub.call('POST', `${hub.h}/environments`, { body: { description: `env-${String(i).padStart(2, '0')}` } });
    if (r.status !== 201) throw new Error(r.text);
  }
  await other.call('POST', `${other.h}/environments`, { body: { description: 'someone else' } });
});

test('default page is 20 with the documented envelope', async (t) => {
  const r = await hub.call('GET', `${hub.h}/environments`);
  t.is(r.status, 200);
  t.is(r.json.content.length, 20);
  t.deepEqual(r.json.pageable, { pageNumber: 0, pageSize: 20 });
  t.is(r.json.totalElements, 25, 'only this hub');
  t.is(r.json.totalPages, 2);
});

test('page and size select a slice; the last page is short; past the end is empty', async (t) => {
  const p1 = await hub.call('GET', `${hub.h}/environments?page=1&size=20`);
  t.is(p1.json.content.length, 5);
  t.deepEqual(p1.json.pageable, { pageNumber: 1, pageSize: 20 });
  const p9 = await hub.call('GET', `${hub.h}/environments?page=9&size=10`);
  t.deepEqual(p9.json.content, []);
  t.is(p9.json.totalPages, 3);
});

test('sort by a field ascending and descending; pages do not overlap', async (t) => {
  const asc = await hub.call('GET', `${hub.h}/environments?sort=description,asc&size=25`);
  const names = asc.json.content.map((e: any) => e.description);
  t.deepEqual(names, [...names].sort());
  t.is(names[0], 'env-00');
  const desc = await hub.call('GET', `${hub.h}/environments?sort=description,desc&size=5`);
  t.deepEqual(
    desc.json.content.map((e: any) => e.description),
    ['env-24', 'env-23', 'env-22', 'env-21', 'env-20'],
  );
  const bare = await hub.call('GET', `${hub.h}/environments?sort=description&size=3&page=1`);
  t.deepEqual(
    bare.json.content.map((e: any) => e.description),
    ['env-03', 'env-04', 'env-05'],
    'bare field sorts ascending',
  );
  const seen = new Set<string>();
  for (let page = 0; page < 3; page++) {
    const r = await hub.call('GET', `${hub.h}/environments?sort=createdAt,desc&size=10&page=${page}`);
    for (const e of r.json.content) seen.add(e.envZId);
  }
  t.is(seen.size, 25);
});

test('bad paging parameters are 400 naming the parameter', async (t) => {
  for (const [q, word] of [
    ['size=0', 'size'],
    ['size=1001', 'size'],
    ['size=abc', 'size'],
    ['page=-1', 'page'],
    ['page=1.5', 'page'],
    ['sort=password', 'password'],
    ['sort=description,sideways', 'direction'],
    ['sort=a,b,c', 'sort'],
  ]) {
    const r = await hub.call('GET', `${hub.h}/environments?${q}`);
    t.is(r.status, 400, q);
    t.is(r.json.error, 'invalid_request');
    t.true(r.json.message.includes(word), `${q}: ${r.json.message}`);
  }
  const max = await hub.call('GET', `${hub.h}/environments?size=1000`);
  t.is(max.status, 200);
});
