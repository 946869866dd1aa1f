/**
 * The clock's CRL refresh: each pass asks for every CRL that is due (none yet, or signed HUB_CRL_REFRESH ago) and
 * the worker signs it anew with the next cRLNumber; nextUpdate is thisUpdate + HUB_CRL_REFRESH + one hour. Here
 * HUB_CRL_REFRESH is one minute, so every CRL is due at each pass (the pass looks a minute ahead).
 */
import test from 'ava';
import crlRefresh from '../../workers/schedules/crlRefresh.js';
import { crlText, fetchBytes } from '../helpers/revocation.js';
import { useStack, waitFor } from '../helpers/stack.js';

const stack = useStack(test, { env: { HUB_CRL_REFRESH: 'PT1M' } });

const crlNumber = (text: string) => Number(/X509v3 CRL Number: \n\s+(\d+)/.exec(text)?.[1]);

test('a pass of the clock signs a new hub CA its first CRL and responder, and signs due CRLs anew with the next number', async (t) => {
  const hub = await stack.hub();
  // the hub's CA is made by its job; no CRL was asked for yet
  const ca = await waitFor(
    async () =>
      (await stack.sql.query("SELECT id FROM certificate_authorities WHERE hub_id = $1 AND kind = 'ISSUING'", [hub.hubId])).rows[0]?.id as string | undefined,
    { what: "the hub's CA" },
  );
  t.is((await stack.sql.query('SELECT 1 FROM certificate_revocation_lists WHERE ca_id = $1', [ca])).rowCount, 0);
  await crlRefresh.run();
  const first = await waitFor(
    async () => (await stack.sql.query('SELECT crl_number, this_update, next_update FROM certificate_revocation_lists WHERE ca_id = $1', [ca])).rows[0],
    { what: 'the first CRL' },
  );
  t.is(Number(first.crl_number), 1);
  t.is(new Date(first.next_update).getTime() - new Date(first.this_update).getTime(), 60_000 + 3600_000);
  t.is((await stack.sql.query('SELECT 1 FROM ocsp_responders WHERE ca_id = $1', [ca])).rowCount, 1);
  // the root's CRL too
  // the root's CRL is a job of its own in the same pass: it may end after the hub CA's
  await waitFor(
    async () =>
      (await stack.sql.query("SELECT 1 FROM certificate_revocation_lists l JOIN certificate_authorities r ON r.id = l.ca_id AND r.kind = 'ROOT'")).rowCount ===
      1,
    { what: "the root CA's CRL" },
  );
  t.pass();

  await crlRefresh.run();
  const text = await waitFor(
    async () => {
      const crl = await crlText((await fetchBytes(`${stack.baseUrl}/pki/${hub.hubId}/crl`)).body);
      return crlNumber(crl) >= 2 && crl;
    },
    { what: 'the CRL signed anew' },
  );
  t.is(crlNumber(text), 2);
  const [, last, next] = /Last Update: (.*)\n\s+Next Update: (.*)\n/.exec(text) ?? [];
  t.is(new Date(next).getTime() - new Date(last).getTime(), 60_000 + 3600_000);
});
