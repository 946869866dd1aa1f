/**
 * What the edge does with a change notification, by table and operation: which tables it reloads and when it asks
 * every open connection again whether it may stay (a pass over all of them, so not after a change that revokes nothing).
 */
import test from 'ava';
import { ChangeRouting, type ChangeTargets } from '../../edge/state/changeRouting.js';
import type { EdgeChange } from '../../edge/types.js';

function targets() {
  const calls: string[] = [];
  const note = (what: string) => () => {
    calls.push(what);
    return Promise.resolve();
  };
  const t: ChangeTargets = {
    routes: { reloadAll: note('routes'), reloadShare: note('route') },
    tcp: { reloadAll: note('tcp'), reloadShare: note('tcp share'), sweep: note('tcp sweep') },
    certificates: { reload: note('certificates') },
    access: { mutualTls: { load: note('mtls load'), onChange: note('mtls change') } },
    directory: { reload: note('directory') },
    gateway: undefined,
    ipsec: undefined,
    connections: { sweep: note('sweep') },
    live: () => undefined,
  };
  return { t, calls };
}

const change = (table: string, op: EdgeChange['op']): EdgeChange => ({ table, op, hubId: 'hub-1', id: 'row-1' });

test('a client certificate added is read, and no open connection is asked again; changed or deleted, every one is', async (t) => {
  for (const [op, sweeps] of [
    ['INSERT', false],
    ['UPDATE', true],
    ['DELETE', true],
  ] as const) {
    const { t: targetsOf, calls } = targets();
    const routing = new ChangeRouting(targetsOf);
    routing.apply(change('client_certificates', op));
    await routing.settled();
    await new Promise((r) => setImmediate(r));
    t.true(calls.includes('mtls change'), op);
    t.is(calls.includes('sweep') && calls.includes('tcp sweep'), sweeps, `${op}: ${calls.join(', ')}`);
  }
});

test("a hub's CA added asks every open connection again (certificates of the CA it replaces stop being admitted)", async (t) => {
  const { t: targetsOf, calls } = targets();
  const routing = new ChangeRouting(targetsOf);
  routing.apply(change('certificate_authorities', 'INSERT'));
  await routing.settled();
  await new Promise((r) => setImmediate(r));
  t.deepEqual(calls, ['mtls change', 'sweep', 'tcp sweep']);
});
