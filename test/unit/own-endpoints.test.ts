/**
 * The service's own endpoints as a configuration names them, and what they deny: this host's addresses at the ports
 * of its listeners and local stores, a remote store at its own address and port only.
 */
import os from 'node:os';
import test from 'ava';
import { loadConfig } from '../../shared/config.js';
import { EgressPolicy } from '../../shared/egress.js';
import { OwnEndpoints, ownEndpointsOf } from '../../shared/ownEndpoints.js';

const env = (extra: Record<string, string>) => ({
  HUB_ADMIN_TOKEN: 'a'.repeat(24),
  HUB_SECRET_KEY: 'b'.repeat(64),
  PORT: '8080',
  HUB_EDGE_HTTP_PORT: '8000',
  HUB_EDGE_HTTPS_PORT: '8443',
  HUB_EDGE_TCP_PORTS: '20000-20999',
  ...extra,
});

test('every dependency and listener of the configuration is listed, metrics ports included', (t) => {
  const cfg = loadConfig(
    env({
      DATABASE_URL: 'postgres://u:p@db.internal/edgehub',
      REDIS_URL: 'redis://:secret@[2001:db8::7]:6380',
      HUB_METRICS_PORT: '9100',
      HUB_EDGE_WORKERS: '3',
      HUB_METRICS_PORTS: '9200-9205',
      HUB_VALIDATION_DNS_LISTEN: '0.0.0.0:5353',
    }),
  );
  const list = ownEndpointsOf(cfg).map(({ host, from, to }) => `${host ?? 'this host'} ${from}-${to}`);
  t.deepEqual(list.sort(), [
    '0.0.0.0 5353-5353',
    '2001:db8::7 6380-6380',
    'db.internal 5432-5432',
    'this host 20000-20999',
    'this host 8000-8000',
    'this host 8080-8080',
    'this host 8443-8443',
    'this host 9100-9102',
    'this host 9200-9205',
  ]);
});

test('a store on this host is denied on every address of this host at its port; a remote one at its address and port only', async (t) => {
  const endpoints = new OwnEndpoints([
    { what: 'PostgreSQL', host: '127.0.0.1', from: 5432, to: 5432 },
    { what: 'Redis', host: '203.0.113.5', from: 6379, to: 6379 },
    { what: 'API', from: 8080, to: 8080 },
  ]);
  const policy = new EgressPolicy(['169.254.0.0/16'], endpoints);
  await policy.ready();
  const iface = Object.values(os.networkInterfaces())
    .flat()
    .find((i) => i && !i.internal)?.address;
  for (const address of ['127.0.0.1', '127.0.0.2', '::1', '::ffff:127.0.0.1', '0.0.0.0', '::', ...(iface ? [iface] : [])]) {
    t.truthy(policy.deniesAt(address, 5432), `${address}:5432`);
    t.truthy(policy.deniesAt(address, 8080), `${address}:8080`);
    t.is(policy.deniesAt(address, 5433), undefined, `${address}:5433 is another service of this host`);
    t.is(policy.deniesAt(address, 6379), undefined, `${address}:6379: the Redis is elsewhere`);
  }
  t.truthy(policy.deniesAt('203.0.113.5', 6379));
  t.truthy(policy.deniesAt('::ffff:203.0.113.5', 6379));
  t.is(policy.deniesAt('203.0.113.5', 6380), undefined);
  t.is(policy.deniesAt('203.0.113.6', 6379), undefined);
  t.is(policy.deniesAt('169.254.169.254', 80), '169.254.0.0/16', 'the CIDRs still apply');
  t.throws(() => policy.checkTarget('[::ffff:7f00:1]', 5432), { code: 'EGRESS_DENIED' } as never);
  t.notThrows(() => policy.checkTarget('127.0.0.1', 5433));
  t.truthy(await policy.ownEndpointRefusal('localhost', 8080), 'a name is judged by what it resolves to');
  t.is(await policy.ownEndpointRefusal('localhost', 8081), undefined);
  policy.close();
});
