import test from 'ava';
import { cachedChainCount } from '../../../domain/commands/clientCertificates.js';
import { config } from '../../../shared/config.js';
import { cachedHubCaCount } from '../../../domain/commands/certificateAuthorities.js';
import { readyRedis } from '../../../shared/redis.js';
import { runExclusive } from '../../../workers/clock.js';
import { makeCsr } from '../../helpers/pki.js';
import { useStack, waitFor } from '../../helpers/stack.js';

/**
 * Decrypted hub CA keys and issuer chains are kept in a size-bounded cache with a TTL, never for the
 * life of the process; the clock's lock key carries HUB_QUEUE_PREFIX.
 */

const stack = useStack(test, { env: { HUB_PKI_CACHE_MAX: '2', HUB_PKI_CACHE_TTL: 'PT3S' } });

test.serial('hub CA keys and chains: at most HUB_PKI_CACHE_MAX kept, each for at most HUB_PKI_CACHE_TTL', async (t) => {
  let seen = 0;
  for (let i = 0; i < 4; i++) {
    const hub = await stack.hub({ name: `cache-${i}` });
    const created = await hub.call('POST', `${hub.h}/client-certificates`, { body: { name: `c${i}`, value: await makeCsr(`/CN=c${i}`) } });
    t.is(created.status, 201, created.text);
    seen = Math.max(seen, cachedHubCaCount());
    const read = await hub.call('GET', `${hub.h}/client-certificates/${created.json.id}`);
    t.is(read.status, 200);
    t.true(cachedHubCaCount() <= 2, `CA keys held: ${cachedHubCaCount()}`);
    t.true(cachedChainCount() <= 2, `chains held: ${cachedChainCount()}`);
  }
  t.true(seen > 0, 'the cache is used');
  await waitFor(async () => cachedHubCaCount() === 0 && cachedChainCount() === 0, { what: 'the entries to expire', timeoutMs: 10_000 });
  t.pass();
});

test.serial('the clock lock key carries HUB_QUEUE_PREFIX', async (t) => {
  const redis = await readyRedis();
  let keys: string[] = [];
  const ran = await runExclusive('prefix-check', new Date(1_000_000), 10_000, async () => {
    keys = await redis.keys('*clock:prefix-check:*');
  });
  t.true(ran);
  t.deepEqual(keys, [`${config().queuePrefix}:clock:prefix-check:1000`]);
});
