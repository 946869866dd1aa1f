import test from 'ava';
import { freePort } from '../../../scripts/services/index.js';
import { publishDnsRecords, startDnsServer, type TestDnsServer } from '../../helpers/dnsServer.js';
import { useStack, waitFor } from '../../helpers/stack.js';

/** An ACME directory that does not answer: issuance fails, and is not retried at the pace of the DNS checks. */
let dns: TestDnsServer;
let closed: number;
test.before(async () => {
  dns = await startDnsServer();
  closed = await freePort();
});
const stack = useStack(test, () => ({
  env: { HUB_DNS_SERVERS: dns.server, HUB_DNS_CHECK_INTERVAL_MS: '50', HUB_ACME_DIRECTORY_URL: `http://127.0.0.1:${closed}/dir` },
}));
test.after.always(async () => {
  await dns?.close();
});

test('a failed issuance leaves the frontend PENDING and backs off instead of asking the CA at every check', async (t) => {
  const hub = await stack.hub();
  const { id } = (await hub.call('POST', `${hub.h}/custom-frontends`, { body: { hostname: 'refused.example.com' } })).json;
  await publishDnsRecords(dns, hub, id);

  const failed = await waitFor(
    async () => {
      const r = await hub.call('GET', `${hub.h}/custom-frontends/${id}`);
      return /certificate issuance failed/.test(r.json.statusMessage ?? '') && r.json;
    },
    { what: 'the issuance failure' },
  );
  t.is(failed.status, 'PENDING');
  t.regex(failed.statusMessage, /ECONNREFUSED/);

  // several more DNS checks pass; none asks the CA again
  const seen = dns.queries.filter((q) => q === 'refused.example.com').length;
  await waitFor(async () => dns.queries.filter((q) => q === 'refused.example.com').length >= seen + 3, { what: 'three more checks' });
  const later = (await hub.call('GET', `${hub.h}/custom-frontends/${id}`)).json;
  t.is(later.status, 'PENDING');
  t.is(later.statusMessage, failed.statusMessage, 'no second attempt: the same failure and retry time');
  const execution = (await hub.call('GET', `${hub.h}/executions?resourceId=${id}&type=frontends.activateCustomFrontend`)).json.content[0];
  t.true(['QUEUED', 'RUNNING'].includes(execution.status), 'the check keeps waiting');
});
