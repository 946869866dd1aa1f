/**
 * `npm start` keeps its own stores up: a redis-server or a PostgreSQL that dies (here SIGKILLed, as the OOM killer
 * does) is started again on the same port with the same data, and the service answers again without a restart of
 * its own: what was written before is still there, and certificates (which need the queue and the worker) are
 * issued again. A clean stop afterwards stops the stores it started again.
 */
import test from 'ava';
import { cleanUpHubs, startHub } from '../helpers/npmStart.js';
import { makeCsr } from '../helpers/pki.js';
import { pidAlive } from '../helpers/processes.js';
import { makeCall, waitFor, type Call } from '../helpers/stack.js';

cleanUpHubs(test);

/** A certificate issued through the worker, retried while the service reconnects (503). */
async function issue(api: Call, h: string, name: string): Promise<void> {
  const r = await waitFor(
    async () => {
      const answer = await api('POST', `${h}/client-certificates`, { body: { name, value: await makeCsr(`/CN=${name}`) } });
      return answer.status === 201 ? answer : answer.status === 503 ? undefined : Promise.reject(new Error(`${answer.status} ${answer.text}`));
    },
    { what: `certificate ${name}`, timeoutMs: 60_000, intervalMs: 500 },
  );
  if (!r.json.id) throw new Error(r.text);
}

test('npm start: a redis-server, then a PostgreSQL, that dies is started again and the service goes on', async (t) => {
  t.timeout(4 * 60_000);
  const run = await startHub();
  const { start, port, adminToken } = run;
  const call = makeCall(`http://127.0.0.1:${port}`);
  const healthy = () =>
    waitFor(async () => (await call('GET', '/healthz').catch(() => ({ status: 0 }))).status === 200, {
      what: 'the API healthy',
      timeoutMs: 60_000,
      intervalMs: 250,
    });
  await healthy();
  const hub = await call('POST', '/admin/v1/hubs', { auth: `Bearer ${adminToken}`, body: { name: 'stores' } });
  t.is(hub.status, 201);
  const key = await call('POST', `/admin/v1/hubs/${hub.json.id}/api-keys`, { auth: `Bearer ${adminToken}`, body: { name: 'k' } });
  const api = makeCall(`http://127.0.0.1:${port}`, `Bearer ${key.json.token}`);
  const h = `/hub/${hub.json.id}`;
  await issue(api, h, 'before');

  const redisPid = Number((await start.waitForLine(/redis-server started \(pid (\d+)/, 'redis-server'))[1]);
  process.kill(redisPid, 'SIGKILL');
  await start.waitForLine(new RegExp(`redis-server \\(pid ${redisPid}\\) exited with signal SIGKILL; starting it again in 1 s`), 'the store seen dying');
  const redisAgain = Number((await start.waitForLine(/redis-server started again \(pid (\d+)\)/, 'redis-server started again', 30_000))[1]);
  t.not(redisAgain, redisPid);
  await healthy();
  await issue(api, h, 'after-redis');

  const postgresPid = Number((await start.waitForLine(/PostgreSQL started \(pid (\d+)/, 'PostgreSQL'))[1]);
  process.kill(postgresPid, 'SIGKILL');
  await start.waitForLine(new RegExp(`PostgreSQL \\(pid ${postgresPid}\\) exited with signal SIGKILL; starting it again`), 'the store seen dying');
  const postgresAgain = Number((await start.waitForLine(/PostgreSQL started again \(pid (\d+)\)/, 'PostgreSQL started again', 90_000))[1]);
  await healthy();
  // the data is the same: the certificates written before are there, and a new one is issued
  await issue(api, h, 'after-postgres');
  const names = (await api('GET', `${h}/client-certificates`)).json.content.map((c: { name: string }) => c.name).sort();
  t.deepEqual(names, ['after-postgres', 'after-redis', 'before']);

  start.child.kill('SIGTERM');
  const code = await new Promise((resolve) => start.child.once('exit', (c) => resolve(c)));
  t.is(code, 0, start.output().slice(-3000));
  await waitFor(async () => !pidAlive(redisAgain) && !pidAlive(postgresAgain), { what: 'the stores started again to stop with it', timeoutMs: 30_000 });
});
