/**
 * An agent's targets when a share is made while the agent is taking its first list. `edgehub share` creates its share
 * and then connects its agent, so the edge's load of the new share and the agent's first list race: the edge sent
 * the list it had and skipped the change because the agent was not up yet, so the agent (and its user, reading
 * "0 targets") heard of the share's target only when a first request for it came. The edge now checks again once a
 * list is acknowledged. The agent runs in this process (agent/lib/run.js) so that its answer to the first list can
 * be held until the edge has loaded the share.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { readIdentity } from '../../agent/lib/identity.js';
import { EdgeLink } from '../../agent/lib/link.js';
import { AgentRunner } from '../../agent/lib/run.js';
import type { Edge } from '../../edge/server.js';
import { enrollAgent, newEnvironment } from '../helpers/agents.js';
import { edgeRequest, routedShare, startBackend, startTestEdge, type Backend } from '../helpers/edge.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

const stack = useStack(test, { env: { HUB_EDGE_FLUSH_MS: '600000' } });
let edge: Edge;
let backend: Backend;
let hub: HubFixture;
const cleanups: (() => Promise<unknown>)[] = [];
stack.onStop(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await edge?.stop(1000);
  await backend?.close();
});
test.before(async () => {
  edge = await startTestEdge();
  backend = await startBackend((_req, res) => res.end('through the agent'));
  hub = await stack.hub({ name: 'targets-race' });
});

test.serial('a share made while its agent takes its first targets reaches the agent once it has taken them, and is served', async (t) => {
  const envZId = await newEnvironment(hub);
  const { dir } = await enrollAgent(hub, envZId, mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'agent-targets-')));

  // the agent holds its answer to the first list of targets until the edge has loaded the share made meanwhile
  type Stream = Parameters<EdgeLink['takeTargets']>[0];
  const original = EdgeLink.prototype.takeTargets;
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  let received = () => {};
  const firstList = new Promise<void>((resolve) => (received = resolve));
  let lists = 0;
  EdgeLink.prototype.takeTargets = function (this: EdgeLink, stream: Stream) {
    if (lists++ > 0) return original.call(this, stream);
    received();
    void held.then(() => original.call(this, stream));
  };
  cleanups.push(async () => (EdgeLink.prototype.takeTargets = original));

  const lines: string[] = [];
  const runner = new AgentRunner({ identity: readIdentity(dir), edges: [`127.0.0.1:${edge.httpsPort}`], log: (line: string) => lines.push(line) }).start();
  cleanups.push(() => runner.stop());
  await firstList;
  const { host } = await routedShare(edge, hub, { name: 'made-meanwhile', target: backend.url, envZId });
  release();

  await waitFor(async () => /connected to edge .*, 0 targets\)$/m.test(lines.join('\n')), {
    what: `the agent up with the list it was first sent (${lines.join(' | ')})`,
  });
  // told of the share's target at once, not only when a first request for it comes (the edge asks then too)
  await waitFor(async () => lines.some((line) => /: 1 target now$/.test(line)), {
    timeoutMs: 3000,
    what: `the agent told of the new target (${lines.join(' | ')})`,
  });
  t.is(lists, 2, 'the first list, then the one with the share');
  const answer = await waitFor(
    async () => {
      const r = await edgeRequest(edge.httpPort!, host);
      return r.status === 200 && r.text;
    },
    { timeoutMs: 5000, what: 'the share served through the agent' },
  );
  t.is(answer, 'through the agent');
});
