/**
 * A test file's bench for agents: an in-process edge listening on every interface, a hub, one private network
 * (a namespace with the private target 'A' on its loopback), the public frontend's certificate, and `agentIn` to run
 * `edgehub agent run` in the namespace with chosen environment variables. Everything is removed when the file ends.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestFn } from 'ava';
import type { Edge } from '../../edge/server.js';
import { publicFrontendCertificate, startTestEdge } from './edge.js';
import { runAgent, runAgentHere, startPrivateTarget, type RunningAgent } from './agents.js';
import { privateNetwork, type PrivateNetwork } from './netns.js';
import { type HubFixture, useStack, type UsedStack } from './stack.js';

export interface AgentBench {
  stack: UsedStack;
  readonly edge: Edge;
  readonly hub: HubFixture;
  readonly ns: PrivateNetwork;
  /** A folder for identities. */
  work: string;
  /** `edgehub agent run --dir dir` in the namespace, dialling the edge, with `env` set for it; killed when the file ends. */
  agentIn(dir: string, env?: Record<string, string>): RunningAgent;
  /** The same on this host (it reaches the service, and targets on this host's loopback). */
  agentHere(dir: string, env?: Record<string, string>): RunningAgent;
}

export function useAgentBench(test: TestFn, env: Record<string, string> = {}): AgentBench {
  const stack = useStack(test, { env: { HUB_EDGE_UPSTREAM_TIMEOUT_MS: '3000', ...env } });
  const cleanups: (() => Promise<unknown>)[] = [];
  let edge: Edge;
  let hub: HubFixture;
  let ns: PrivateNetwork;
  stack.onStop(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    await edge?.stop(1000);
  });
  test.before(async () => {
    edge = await startTestEdge({ host: '0.0.0.0' });
    hub = await stack.hub();
    ns = await privateNetwork();
    cleanups.push(() => ns.remove());
    await startPrivateTarget(ns, 'A');
    await publicFrontendCertificate(stack.databaseUrl);
  });
  return {
    stack,
    get edge() {
      return edge;
    },
    get hub() {
      return hub;
    },
    get ns() {
      return ns;
    },
    work: mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'agents-')),
    agentHere(dir, agentEnv = {}) {
      const agent = runAgentHere(dir, [edge.httpsPort!], agentEnv);
      cleanups.push(() => agent.stop('SIGKILL'));
      return agent;
    },
    agentIn(dir, agentEnv = {}) {
      const saved = Object.fromEntries(Object.keys(agentEnv).map((k) => [k, process.env[k]]));
      Object.assign(process.env, agentEnv);
      try {
        const agent = runAgent(ns, dir, [edge.httpsPort!]);
        cleanups.push(() => agent.stop('SIGKILL'));
        return agent;
      } finally {
        for (const [k, v] of Object.entries(saved)) {
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
        }
      }
    },
  };
}
