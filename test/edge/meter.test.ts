import test from 'ava';
import { Meter } from '../../edge/meter.js';
import type { ShareRoute } from '../../edge/types.js';
import type { UsageRow } from '../../shared/metrics/store.js';

const route = (zId: string): ShareRoute => ({
  zId,
  hubId: 'hub-1',
  envZId: 'env-1',
  reach: 'edge',
  frontendId: 'f',
  target: new URL('http://127.0.0.1:1'),
  mutualTls: false,
  auth: null,
  emailDomains: null,
  checkIntervalMs: 0,
});

/** A usage store that is unreachable until told otherwise (the flush path of a PostgreSQL outage). */
function flakyStore() {
  const stored: UsageRow[] = [];
  const state = { up: false, calls: 0 };
  const store = async (rows: UsageRow[]) => {
    state.calls++;
    if (!state.up) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
    stored.push(...rows);
  };
  return { stored, state, store };
}

test('an unreachable store keeps the counts and a later flush writes them all, once', async (t) => {
  const { stored, state, store } = flakyStore();
  const meter = new Meter(store, { flushMs: 60_000, pendingMaxRows: 1000 });
  meter.add(route('a'), 100, 1000);
  await meter.flush();
  meter.add(route('a'), 5, 50);
  meter.add(route('b'), 1, 2);
  await meter.flush();
  t.is(stored.length, 0);
  t.is(state.calls, 2);
  state.up = true;
  await meter.flush();
  const sum = (zId: string) => stored.filter((r) => r.shareId === zId).reduce((s, r) => ({ rx: s.rx + r.rx, tx: s.tx + r.tx }), { rx: 0, tx: 0 });
  t.deepEqual(sum('a'), { rx: 105, tx: 1050 });
  t.deepEqual(sum('b'), { rx: 1, tx: 2 });
  t.true(stored.every((r) => r.hubId === 'hub-1' && r.envZId === 'env-1'));
  await meter.flush();
  t.is(stored.length, 3, 'nothing is written twice');
});

test('memory stays bounded while the store is away: beyond the limit the oldest rows are dropped and counted', async (t) => {
  const { stored, state, store } = flakyStore();
  const meter = new Meter(store, { flushMs: 60_000, pendingMaxRows: 100 });
  for (let i = 0; i < 150; i++) {
    meter.add(route(`s${i}`), 1, 1);
    await meter.flush();
  }
  t.is(meter.totals.droppedRows, 50);
  state.up = true;
  await meter.flush();
  t.is(stored.length, 100);
  t.is(stored[0].shareId, 's50', 'the newest rows are the ones kept');
});
