/**
 * Live request streams (`GET H/shares/{id}/requests/live`) are bounded and end when they must, through the real API
 * and real sockets: 429 `too_many_requests` past the streams per key (HUB_INSPECT_LIVE_MAX) and per hub
 * (HUB_INSPECT_LIVE_HUB_MAX), a slot given back when a stream closes, and a stream ended (the client sees its end)
 * after its API key is revoked, its share deleted, or its hub deleted, and after its lifetime.
 */
import test from 'ava';
import { liveStreams } from '../../domain/commands/liveStreams.js';
import { resetConfig } from '../../shared/config.js';
import { edgeRequest, routedShare, useBackend, useTestEdge } from '../helpers/edge.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

const stack = useStack(test, { env: { HUB_INSPECT_LIVE_MAX: '2', HUB_INSPECT_LIVE_HUB_MAX: '3', HUB_EDGE_FLUSH_MS: '600000' } });
const backend = useBackend(test, stack, (_req, res) => res.end('ok'));
const edge = useTestEdge(test, stack);

/** How long a stream may take to end once it must (the promise is 2 s): past it, the stream did not end. */
const ENDS_WITHIN_MS = 10_000;

interface Stream {
  status: number;
  /** The body of a refusal. */
  json?: { error: string; message: string };
  /** Resolves with true once the server ended the stream; false when it was still open after ENDS_WITHIN_MS. */
  ended(): Promise<boolean>;
  /** What was read so far. */
  text(): string;
  close(): void;
}

async function open(bearer: string, path: string): Promise<Stream> {
  const controller = new AbortController();
  const res = await fetch(`${stack.baseUrl}${path}`, { headers: { authorization: bearer }, signal: controller.signal });
  if (res.status !== 200) {
    const json = await res.json();
    return { status: res.status, json, ended: async () => true, text: () => '', close: () => undefined };
  }
  let text = '';
  const reader = res.body!.getReader();
  const done = (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return true;
        text += Buffer.from(value).toString();
      }
    } catch {
      return false; // aborted by the test
    }
  })();
  await waitFor(async () => text.includes(': connected'), { what: 'the stream connected' });
  return {
    status: 200,
    ended: () => Promise.race([done, new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ENDS_WITHIN_MS))]),
    text: () => text,
    close: () => controller.abort(),
  };
}

const live = (h: { h: string }, zId: string) => `${h.h}/shares/${zId}/requests/live`;

async function newKey(hubId: string): Promise<{ id: string; bearer: string }> {
  const key = await stack.call('POST', `/admin/v1/hubs/${hubId}/api-keys`, { auth: stack.admin, body: { name: 'live' } });
  if (key.status !== 201) throw new Error(`key: ${key.status} ${key.text}`);
  return { id: key.json.id, bearer: `Bearer ${key.json.token}` };
}

let hub: HubFixture;
let other: HubFixture;
test.before(async () => {
  [hub, other] = await Promise.all([stack.hub(), stack.hub()]);
});

test.serial('streams past the per-key and the per-hub bound get 429 too_many_requests; a closed stream gives its slot back', async (t) => {
  const { zId, host } = await routedShare(edge, hub, { target: backend.url, inspect: true });
  const theirs = await routedShare(edge, other, { target: backend.url, inspect: true });
  const second = await newKey(hub.hubId);
  const first = [await open(hub.bearer, live(hub, zId)), await open(hub.bearer, live(hub, zId))];
  t.deepEqual(
    first.map((s) => s.status),
    [200, 200],
  );
  const overKey = await open(hub.bearer, live(hub, zId));
  t.is(overKey.status, 429);
  t.is(overKey.json?.error, 'too_many_requests');
  t.regex(overKey.json?.message ?? '', /HUB_INSPECT_LIVE_MAX/);
  // another key of the hub: the hub's bound (3) is reached with its first stream
  const third = await open(second.bearer, live(hub, zId));
  t.is(third.status, 200);
  const overHub = await open(second.bearer, live(hub, zId));
  t.is(overHub.status, 429);
  t.is(overHub.json?.error, 'too_many_requests');
  t.regex(overHub.json?.message ?? '', /HUB_INSPECT_LIVE_HUB_MAX/);
  // another hub is not held to this one's bound
  const theirStream = await open(other.bearer, live(other, theirs.zId));
  t.is(theirStream.status, 200);
  // the streams that are open still work
  await edgeRequest(edge.httpPort!, host, { path: '/seen-live' });
  await waitFor(async () => first[0].text().includes('/seen-live'), { what: 'the exchange on the open stream' });

  // a stream that closes gives its slot back (in this process and over all of them)
  const before = liveStreams().size;
  first[0].close();
  await waitFor(async () => liveStreams().size === before - 1, { what: 'the closed stream released' });
  const again = await open(hub.bearer, live(hub, zId));
  t.is(again.status, 200, JSON.stringify(again.json));
  for (const s of [first[1], third, theirStream, again]) s.close();
  await waitFor(async () => liveStreams().size === 0, { what: 'every stream released' });
});

test.serial("a stream ends after its API key is revoked; the key's next stream is 401", async (t) => {
  const { zId } = await routedShare(edge, hub, { target: backend.url, inspect: true });
  const key = await newKey(hub.hubId);
  const stream = await open(key.bearer, live(hub, zId));
  t.is(stream.status, 200);
  const kept = await open(hub.bearer, live(hub, zId));
  const revoked = await stack.call('DELETE', `/admin/v1/hubs/${hub.hubId}/api-keys/${key.id}`, { auth: stack.admin });
  t.true(revoked.status < 300, revoked.text);
  t.true(await stream.ended(), "the revoked key's stream ended");
  t.is((await open(key.bearer, live(hub, zId))).status, 401);
  // the stream of a key that was not revoked goes on
  t.false(await Promise.race([kept.ended(), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 3000))]));
  kept.close();
});

test.serial('a stream ends after its share is deleted', async (t) => {
  const { zId } = await routedShare(edge, hub, { target: backend.url, inspect: true });
  const kept = await routedShare(edge, hub, { target: backend.url, inspect: true });
  const stream = await open(hub.bearer, live(hub, zId));
  const other = await open(hub.bearer, live(hub, kept.zId));
  t.is((await hub.call('DELETE', `${hub.h}/shares/${zId}`)).status, 204);
  t.true(await stream.ended(), "the deleted share's stream ended");
  t.is((await open(hub.bearer, live(hub, zId))).status, 404);
  t.false(await Promise.race([other.ended(), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 3000))]), "another share's stream goes on");
  other.close();
});

test.serial("a stream ends after its hub is deleted, the operator's stream too", async (t) => {
  const doomed = await stack.hub();
  const { zId } = await routedShare(edge, doomed, { target: backend.url, inspect: true });
  const stream = await open(doomed.bearer, live(doomed, zId));
  const operator = await open(stack.admin, live(doomed, zId));
  t.is(operator.status, 200);
  t.is((await stack.call('DELETE', `/admin/v1/hubs/${doomed.hubId}`, { auth: stack.admin })).status, 204);
  t.true(await stream.ended(), "the deleted hub's stream ended");
  t.true(await operator.ended(), "the operator's stream of the deleted hub ended");
});

test.serial('a stream ends after HUB_INSPECT_LIVE_LIFETIME; the client reconnects and is admitted anew', async (t) => {
  const { zId } = await routedShare(edge, hub, { target: backend.url, inspect: true });
  const saved = process.env.HUB_INSPECT_LIVE_LIFETIME;
  process.env.HUB_INSPECT_LIVE_LIFETIME = 'PT1S';
  resetConfig();
  try {
    const stream = await open(hub.bearer, live(hub, zId));
    t.is(stream.status, 200);
    t.regex(stream.text(), /retry: \d+/, 'the client is told when to reconnect');
    t.true(await stream.ended(), 'the stream ended at the end of its lifetime');
    await waitFor(async () => liveStreams().size === 0, { what: 'its slot given back' });
    const again = await open(hub.bearer, live(hub, zId));
    t.is(again.status, 200);
    again.close();
  } finally {
    if (saved === undefined) delete process.env.HUB_INSPECT_LIVE_LIFETIME;
    else process.env.HUB_INSPECT_LIVE_LIFETIME = saved;
    resetConfig();
  }
});
