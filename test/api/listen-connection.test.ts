/**
 * One LISTEN connection per process and database: every channel a process listens on (the auth cache's revocations,
 * the OCSP cache's CA changes, the live streams' share deletions) rides one PostgreSQL connection, which LISTENs on
 * what is asked, tells every listener of a loss and of listening anew, and goes when the last listener closes.
 */
import test from 'ava';
import { applicationName } from '../../shared/db.js';
import { listen } from '../../shared/pgListen.js';
import { useStack, waitFor } from '../helpers/stack.js';

const stack = useStack(test, { workers: false });

const connectionsNamed = async (name: string) =>
  (await stack.sql.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1', [name])).rows.map(
    (r) => r.pid,
  );

const notify = (channel: string, payload: string) => stack.sql.query('SELECT pg_notify($1, $2)', [channel, payload]);

test.serial('the web process listens on every channel over one connection', async (t) => {
  // the API server is up (auth cache and OCSP cache listening): one connection of its name, however many channels
  await waitFor(async () => (await connectionsNamed(`${applicationName()}-listen`)).length === 1, { what: 'the web process listening' });
  const all = await stack.sql.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE '%listen%'`);
  t.is(all.rows[0].n, 1, 'no other LISTEN connection of the web process');
});

test.serial('channels share a connection; a cut tells each listener, and each hears again once it is back; the last close ends it', async (t) => {
  const name = 'listen-test';
  const heard: string[] = [];
  const resets: string[] = [];
  const options = { connectionString: stack.databaseUrl, applicationName: name, maxBackoffMs: 200 };
  const a = listen(
    'test_a',
    (p) => heard.push(`a:${p}`),
    (why) => resets.push(`a:${why}`),
    options,
  );
  const b = listen(
    'test_b',
    (p) => heard.push(`b:${p}`),
    (why) => resets.push(`b:${why}`),
    options,
  );
  await Promise.all([a.ready(), b.ready()]);
  t.true(a.live && b.live);
  t.is((await connectionsNamed(name)).length, 1, 'two channels, one connection');
  await notify('test_a', '1');
  await notify('test_b', '2');
  await waitFor(async () => heard.length === 2, { what: 'both notifications' });
  t.deepEqual(heard.sort(), ['a:1', 'b:2'], 'each listener hears its own channel only');

  // a channel asked for while the connection is up
  const c = listen(
    'test_c',
    (p) => heard.push(`c:${p}`),
    (why) => resets.push(`c:${why}`),
    options,
  );
  await c.ready();
  await notify('test_c', '3');
  await waitFor(async () => heard.includes('c:3'), { what: 'the third channel' });
  t.is((await connectionsNamed(name)).length, 1);

  // cut: every listener is told, none is live until listening again, then each hears its channel again
  resets.length = 0;
  await stack.sql.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [name]);
  await waitFor(async () => ['a', 'b', 'c'].every((x) => resets.includes(`${x}:lost`) && resets.includes(`${x}:listening`)), {
    what: 'lost and listening again',
  });
  for (const x of ['a', 'b', 'c']) t.true(resets.indexOf(`${x}:lost`) < resets.indexOf(`${x}:listening`), `${x}: lost, then listening`);
  t.true(a.live && b.live && c.live);
  heard.length = 0;
  await notify('test_a', '4');
  await notify('test_b', '5');
  await notify('test_c', '6');
  await waitFor(async () => heard.length === 3, { what: 'the three notifications after the cut' });
  t.deepEqual(heard.sort(), ['a:4', 'b:5', 'c:6']);
  t.is((await connectionsNamed(name)).length, 1);

  // a closed listener hears nothing more; the others still do; the last close ends the connection
  await a.close();
  heard.length = 0;
  await notify('test_a', '7');
  await notify('test_b', '8');
  await waitFor(async () => heard.includes('b:8'), { what: 'b after a closed' });
  t.false(heard.includes('a:7'));
  await b.close();
  t.is((await connectionsNamed(name)).length, 1, 'still open for c');
  await c.close();
  await waitFor(async () => (await connectionsNamed(name)).length === 0, { what: 'the connection to end with its last listener' });

  // and a new listener after that makes a new connection
  const d = listen(
    'test_d',
    (p) => heard.push(`d:${p}`),
    () => undefined,
    options,
  );
  await d.ready();
  await notify('test_d', '9');
  await waitFor(async () => heard.includes('d:9'), { what: 'a listener after the last one closed' });
  await d.close();
  t.pass();
});

test.serial('a listener that is not listening yet says so: ready() bounds the wait', async (t) => {
  const l = listen(
    'test_e',
    () => undefined,
    () => undefined,
    { connectionString: 'postgres://nobody@127.0.0.1:1/none', applicationName: 'listen-nowhere', maxBackoffMs: 200 },
  );
  t.false(l.live);
  await t.throwsAsync(() => l.ready(500), { message: /not listening on test_e within 500 ms/ });
  await l.close();
});
