import test from 'ava';
import { QueryTypes } from 'sequelize';
import { db } from '../../../shared/db.js';
import { type HubFixture, useStack, waitFor } from '../../helpers/stack.js';
import { assertSeries, environment, get, HOUR, MINUTE, rollUpAll, sampleMaker, type Sample } from '../../helpers/usage.js';
import { assertRefused } from '../../helpers/refusals.js';

const stack = useStack(test);

const { samplesOf } = sampleMaker(11);

const ingest = (samples: Sample[]) => stack.call('POST', '/admin/v1/usage', { auth: stack.admin, body: { samples } });
async function ingestOk(samples: Sample[]) {
  const r = await ingest(samples);
  if (r.status !== 202) throw new Error(`ingest: ${r.status} ${r.text}`);
}

async function share(hub: HubFixture, name: string, envZId?: string): Promise<string> {
  const frontends = await get(hub, `${hub.h}/frontends`);
  const r = await hub.call('POST', `${hub.h}/shares`, { body: { name, frontendIds: [frontends[0].id], target: 'http://10.0.0.5:8080', envZId } });
  if (r.status !== 201) throw new Error(`share: ${r.status} ${r.text}`);
  return r.json.zId;
}

async function deployedTunnel(hub: HubFixture): Promise<string> {
  const r = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: { name: 'office', peerPublicIp: '203.0.113.10', peerCidr: '192.168.10.0/24' } });
  if (r.status !== 202) throw new Error(`tunnel: ${r.status} ${r.text}`);
  await waitFor(async () => (await hub.call('GET', `${hub.h2}/ipsec-tunnels/${r.json.id}`)).json?.status === 'DEPLOYED', { what: 'tunnel DEPLOYED' });
  return r.json.id;
}

async function ipsecShare(hub: HubFixture, tunnelId: string, envZId: string, name: string, ingressPort: number): Promise<string> {
  const r = await hub.call('POST', `${hub.h2}/ipsec-shares`, { body: { name, ipsecTunnelId: tunnelId, envZId, target: '192.168.10.5:443', ingressPort } });
  if (r.status !== 202) throw new Error(`ipsec share: ${r.status} ${r.text}`);
  return r.json.id;
}

test('share metrics are exact under every path form; a share sample counts for its environment', async (t) => {
  const hub = await stack.hub();
  const env = await environment(hub);
  const zId = await share(hub, 'web', env);
  const other = await share(hub, 'api', env);
  const mine = [...samplesOf({ hubId: hub.hubId, shareId: zId }, 60, 50), ...samplesOf({ hubId: hub.hubId, shareId: zId, envZId: env }, 30, 50)];
  const theirs = samplesOf({ hubId: hub.hubId, shareId: other }, 40, 50);
  await ingestOk([...mine, ...theirs]);
  await rollUpAll();
  const later = samplesOf({ hubId: hub.hubId, shareId: zId }, 40, 50);
  await ingestOk(later);
  for (const path of [
    `${hub.h}/shares/${zId}/metrics?range=PT1H`,
    `${hub.h2}/shares/${zId}/metrics?duration=PT1H`,
    `/hub/shares/${zId}/metrics?duration=1h`,
    `/hub/shares/${zId}/metrics`,
  ]) {
    const series = await get(hub, path);
    t.like(series, { hubId: hub.hubId, scope: 'share', id: zId, shareToken: zId, period: 'PT1H' }, path);
    assertSeries(t, series.samples, [...mine, ...later], MINUTE, path);
  }
  const envSeries = await get(hub, `/hub/environments/${env}/metrics?range=PT1H&step=PT5M`);
  assertSeries(t, envSeries.samples, [...mine, ...theirs, ...later], 5 * MINUTE, 'the environment holds its shares');
});

test('a sample naming a share of another hub, or of another environment, is rejected', async (t) => {
  const a = await stack.hub();
  const b = await stack.hub();
  const [envA, envA2] = [await environment(a), await environment(a)];
  const zId = await share(a, 'web', envA);
  const now = new Date().toISOString();
  const wrongHub = await ingest([{ hubId: b.hubId, shareId: zId, rx: 1, tx: 1, timestamp: now }]);
  // the message names the sample and the share it refers to
  assertRefused(t, wrongHub, 400, 'invalid_request', 'EH_INVALID_REQUEST', ['$.samples[0]', `share '${zId}' not found in hub '${b.hubId}'`]);
  const wrongEnv = await ingest([
    { hubId: a.hubId, shareId: zId, rx: 1, tx: 1, timestamp: now },
    { hubId: a.hubId, shareId: zId, envZId: envA2, rx: 1, tx: 1, timestamp: now },
  ]);
  assertRefused(t, wrongEnv, 400, 'invalid_request', 'EH_INVALID_REQUEST', ['$.samples[1]', `environment '${envA}', not '${envA2}'`]);
  const [{ n }] = await db().query<{ n: number }>('SELECT count(*)::int AS n FROM usage_samples WHERE hub_id IN ($1, $2)', {
    bind: [a.hubId, b.hubId],
    type: QueryTypes.SELECT,
  });
  t.is(n, 0);
});

test("share metrics: another hub's share is 404, another hub's path is 403, an unknown share 404", async (t) => {
  const a = await stack.hub();
  const b = await stack.hub();
  const zId = await share(a, 'web');
  for (const path of [`/hub/shares/${zId}/metrics`, `${b.h}/shares/${zId}/metrics`, `${a.h}/shares/nope/metrics`.replace(a.h, b.h)]) {
    const r = await b.call('GET', path);
    assertRefused(t, r, 404, 'not_found', 'EH_NOT_FOUND');
  }
  const forbidden = await b.call('GET', `${a.h}/shares/${zId}/metrics`);
  assertRefused(t, forbidden, 403, 'not_found', 'EH_NOT_AUTHORIZED');
  const bad = await a.call('GET', `/hub/shares/${zId}/metrics?duration=forever`);
  assertRefused(t, bad, 400, 'invalid_request', 'EH_INVALID_REQUEST', "query parameter 'duration'");
});

test('sparklines hold every share of the hub, exact, zeros where unused, in one response', async (t) => {
  const hub = await stack.hub();
  const stranger = await stack.hub();
  const env = await environment(hub);
  const shares = [await share(hub, 'one', env), await share(hub, 'two'), await share(hub, 'idle')];
  const foreign = await share(stranger, 'foreign');
  const byShare = new Map<string, Sample[]>([
    [shares[0], samplesOf({ hubId: hub.hubId, shareId: shares[0] }, 50, 50)],
    [shares[1], samplesOf({ hubId: hub.hubId, shareId: shares[1] }, 50, 50)],
    [shares[2], []],
  ]);
  await ingestOk([...byShare.get(shares[0])!, ...byShare.get(shares[1])!.slice(0, 20), ...samplesOf({ hubId: hub.hubId }, 10, 50)]);
  await ingestOk(samplesOf({ hubId: stranger.hubId, shareId: foreign }, 10, 50));
  await rollUpAll();
  await ingestOk(byShare.get(shares[1])!.slice(20));
  for (const [path, step, points] of [
    [`${hub.h}/metrics/sparklines?duration=PT1H`, 2 * MINUTE, 30],
    [`${hub.h2}/sparklines?duration=PT1H&step=PT1M`, MINUTE, 60],
    [`${hub.h}/sparklines`, HOUR, 24],
  ] as const) {
    const body = await get(hub, path);
    t.is(body.hubId, hub.hubId);
    t.deepEqual(
      body.sparklines.map((s: { id: string }) => s.id),
      shares,
      `${path}: every share of the hub, none of another`,
    );
    for (const line of body.sparklines) {
      t.is(line.scope, 'share');
      t.is(line.samples.length, points, path);
      assertSeries(t, line.samples, byShare.get(line.id)!, step, `${path} ${line.id}`);
    }
  }
  const bad = await hub.call('GET', `${hub.h}/sparklines?duration=PT1H&step=PT10S`);
  t.is(bad.status, 400);
  t.is(bad.json.error, 'invalid_request');
});

test('IPsec tunnel metrics are the sum of its IPsec shares; IPsec share metrics are their own', async (t) => {
  const hub = await stack.hub({ ipsec: true });
  const env = await environment(hub);
  const tunnel = await deployedTunnel(hub);
  const [s1, s2] = [await ipsecShare(hub, tunnel, env, 'db', 5432), await ipsecShare(hub, tunnel, env, 'ssh', 2222)];
  const on1 = samplesOf({ hubId: hub.hubId, shareId: s1 }, 40, 25);
  const on2 = samplesOf({ hubId: hub.hubId, shareId: s2, envZId: env }, 40, 25);
  await ingestOk([...on1, ...on2.slice(0, 10)]);
  await rollUpAll();
  await ingestOk(on2.slice(10));
  for (const [window, step, points] of [
    [undefined, MINUTE, 60],
    ['30m', MINUTE, 30],
    ['1h', MINUTE, 60],
    ['1d', 15 * MINUTE, 96],
    ['7d', HOUR, 168],
  ] as const) {
    for (const prefix of [hub.h2, hub.h]) {
      const path = `${prefix}/ipsec-tunnels/${tunnel}/metrics${window ? `?window=${window}` : ''}`;
      const series = await get(hub, path);
      t.like(series, { hubId: hub.hubId, scope: 'ipsecTunnel', id: tunnel }, path);
      t.is(series.samples.length, points, path);
      assertSeries(t, series.samples, [...on1, ...on2], step, path);
    }
  }
  const shareSeries = await get(hub, `${hub.h2}/ipsec-shares/${s1}/metrics?duration=15m`);
  t.like(shareSeries, { hubId: hub.hubId, scope: 'ipsecShare', id: s1, period: 'PT15M' });
  t.is(shareSeries.samples.length, 15);
  assertSeries(t, (await get(hub, `${hub.h2}/ipsec-shares/${s2}/metrics?duration=1h`)).samples, on2, MINUTE, 'IPsec share s2');
  assertSeries(t, (await get(hub, `${hub.h2}/ipsec-shares/${s1}/metrics?duration=PT1H`)).samples, on1, MINUTE, 'IPsec share s1');
  const sparklines = await get(hub, `${hub.h2}/sparklines?duration=PT1H`);
  t.deepEqual(
    sparklines.sparklines.map((s: { scope: string; id: string }) => [s.scope, s.id]),
    [
      ['ipsecShare', s1],
      ['ipsecShare', s2],
    ],
  );

  for (const window of ['2h', 'PT1H', '', '30M']) {
    const r = await hub.call('GET', `${hub.h2}/ipsec-tunnels/${tunnel}/metrics?window=${window}`);
    assertRefused(t, r, 400, 'invalid_request', 'EH_INVALID_REQUEST', ["'window'", '30m, 1h, 1d, 7d']);
  }
  for (const path of [`${hub.h2}/ipsec-tunnels/nope/metrics`, `${hub.h2}/ipsec-shares/nope/metrics`]) {
    const r = await hub.call('GET', path);
    t.is(r.status, 404, path);
    t.is(r.json.error, 'not_found');
  }
  const otherIpsecHub = await stack.hub({ ipsec: true });
  for (const path of [`${otherIpsecHub.h2}/ipsec-tunnels/${tunnel}/metrics`, `${otherIpsecHub.h2}/ipsec-shares/${s1}/metrics`]) {
    const r = await otherIpsecHub.call('GET', path);
    t.is(r.status, 404, `another hub's id: ${path}`);
  }
  const forbidden = await otherIpsecHub.call('GET', `${hub.h2}/ipsec-tunnels/${tunnel}/metrics`);
  t.is(forbidden.status, 403);
});

test('IPsec metrics need the IPsec feature: 403 not_found', async (t) => {
  const hub = await stack.hub({ ipsec: false });
  for (const path of [`${hub.h2}/ipsec-tunnels/x/metrics`, `${hub.h2}/ipsec-shares/x/metrics?duration=15m`, `${hub.h}/ipsec-tunnels/x/metrics`]) {
    const r = await hub.call('GET', path);
    t.is(r.status, 403, path);
    t.deepEqual(r.json, { error: 'not_found', message: 'IPsec is not enabled for this hub' });
  }
});
