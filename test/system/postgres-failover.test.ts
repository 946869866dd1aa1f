import { chmodSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { Sequelize } from 'sequelize';
import { migrate } from '../../domain/migrate.js';
import { type PostgresWithStandby, startPostgresWithStandby } from '../../scripts/services/postgresStandby.js';
import { type Relay, startRelay } from '../../scripts/services/relay.js';
import { useStack, waitFor } from '../helpers/stack.js';

/**
 * PostgreSQL failover behind one address that moves: a real primary with a synchronous standby (streaming
 * replication, `synchronous_standby_names`), reached through a relay that a failover points elsewhere. A connection
 * that lands on the standby while it is in recovery is dropped and the request answered 503 with Retry-After; when the
 * primary is SIGKILLed and the standby promoted, nothing acknowledged with 2xx before is lost, the API answers 503
 * meanwhile (never 500), and the change notifications come back on the new primary (a key revoked after the failover
 * stops working at once).
 */

let ha: PostgresWithStandby;
let relay: Relay;
let databaseUrl: string;
test.before(async () => {
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'pg-standby-'));
  chmodSync(dir, 0o755);
  ha = await startPostgresWithStandby(dir, 'edgehub');
  relay = await startRelay(ha.primary.port);
  databaseUrl = ha.url(relay.port, 'edgehub');
  const migrator = new Sequelize(databaseUrl, { logging: false });
  await migrate(migrator);
  await migrator.close();
});
// the tests' own pool (stack.sql) is not used: it would land on whatever the relay points at
const stack = useStack(test, () => ({ databaseUrl, env: { HUB_AUTH_FAILURE_LIMIT: '0' } }));
test.after.always(async () => {
  await relay?.close();
  await ha?.stop();
});

test.serial('a connection that lands on the standby (in recovery) is dropped: 503 with Retry-After, never 500; on the primary again, 200', async (t) => {
  const hub = await stack.hub({ name: 'standby-landing' });
  relay.switchTo(ha.standby.port);
  const write = await hub.call('POST', `${hub.h}/environments`, { body: { description: 'on a standby' } });
  t.is(write.status, 503, write.text);
  t.is(write.json.error, 'unavailable');
  t.truthy(write.headers.get('retry-after'));
  const read = await hub.call('GET', `${hub.h}/environments`);
  t.is(read.status, 503, 'no connection is kept on a server in recovery, reads included');
  relay.switchTo(ha.primary.port);
  await waitFor(async () => (await hub.call('GET', `${hub.h}/environments`)).status === 200, { what: 'the API on the primary again' });
  t.is((await hub.call('POST', `${hub.h}/environments`, { body: { description: 'on the primary' } })).status, 201);
});

test.serial('the primary SIGKILLed and the standby promoted: no acknowledged write lost, 503 meanwhile, never 500; notifications come back', async (t) => {
  const hub = await stack.hub({ name: 'failover' });
  const acknowledged: string[] = [];
  const statuses = new Map<number, number>();
  let phase = 'before' as 'before' | 'during' | 'after';
  let afterSwitch = 0;
  const writer = (async () => {
    for (let i = 0; afterSwitch < 10 && i < 5000; i++) {
      const r = await hub.call('POST', `${hub.h}/environments`, { body: { description: `write ${i}` } });
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      if (r.status === 201) {
        acknowledged.push(r.json.envZId);
        if (phase === 'after') afterSwitch++;
      } else if (r.status === 503) await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  await waitFor(async () => acknowledged.length >= 20, { what: 'writes before the failover' });
  phase = 'during';
  ha.primary.kill();
  relay.switchTo(undefined);
  await ha.promoteStandby();
  relay.switchTo(ha.standby.port);
  phase = 'after';
  await writer;
  t.log(`answers: ${JSON.stringify([...statuses])}; ${acknowledged.length} writes acknowledged`);
  t.deepEqual(
    [...statuses.keys()].filter((s) => s !== 201 && s !== 503),
    [],
    'only 201 and 503',
  );
  t.true(afterSwitch >= 10, 'writes succeed on the promoted standby');

  // every write answered 2xx is on the new primary (the standby was synchronous)
  const listed = new Set<string>();
  for (let page = 0; ; page++) {
    const r = await hub.call('GET', `${hub.h}/environments?size=100&page=${page}`);
    t.is(r.status, 200);
    for (const e of r.json.content) listed.add(e.envZId);
    if (page + 1 >= r.json.totalPages) break;
  }
  const lost = acknowledged.filter((id) => !listed.has(id));
  t.deepEqual(lost, [], 'acknowledged writes lost');

  // the change notifications listen on the new primary: a key revoked now stops working at once, although cached
  const key = await stack.call('POST', `/admin/v1/hubs/${hub.hubId}/api-keys`, { auth: stack.admin, body: { name: 'after-failover' } });
  t.is(key.status, 201);
  const bearer = `Bearer ${key.json.token}`;
  t.is((await stack.call('GET', `${hub.h}/environments`, { auth: bearer })).status, 200);
  t.is((await stack.call('DELETE', `/admin/v1/hubs/${hub.hubId}/api-keys/${key.json.id}`, { auth: stack.admin })).status, 200);
  await waitFor(async () => (await stack.call('GET', `${hub.h}/environments`, { auth: bearer })).status === 401, {
    timeoutMs: 5000,
    what: 'the revoked key refused',
  });
  t.pass();
});
