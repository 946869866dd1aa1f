/**
 * Agents in the tests as users run them: the private target inside a network namespace, `edgehub agent enroll`
 * into a folder, `edgehub agent run` inside the namespace dialing the edge on the host's side of the veth.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { PrivateNetwork } from './netns.js';
import { waitFor, type HubFixture } from './stack.js';
import { scriptArgs } from './script.js';
import { stopChild } from './teardown.js';

/** The private target of a namespace (test/helpers/privateTarget.ts: HTTP on 8080, TCP echo on 9090 unless given), answering `name`. */
export async function startPrivateTarget(
  ns: PrivateNetwork,
  name: string,
  ports: { http: number; tcp: number } = { http: 8080, tcp: 9090 },
): Promise<ChildProcess> {
  const child = ns.spawn(process.execPath, scriptArgs('test/helpers/privateTarget.ts', name, String(ports.http), String(ports.tcp)));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    child.once('exit', (code) => reject(new Error(`the target in ${ns.name} exited (${code})`)));
  });
  return child;
}

/** `edgehub ...` as a user runs it; resolves with its exit code and output. */
export function edgehubCli(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['agent/bin/edgehub.js', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A new environment of the hub; its envZId. */
export async function newEnvironment(hub: HubFixture, description = 'private network'): Promise<string> {
  const r = await hub.call('POST', `${hub.h}/environments`, { body: { description } });
  if (r.status !== 201) throw new Error(`environment: ${r.status} ${r.text}`);
  return r.json.envZId;
}

/** Enrolls an agent of `envZId` through the command line into a fresh folder under `work`. */
export async function enrollAgent(hub: HubFixture, envZId: string, work: string): Promise<{ dir: string; id: string }> {
  const enrollment = await hub.call('POST', `${hub.h}/environments/${envZId}/agent-enrollment`, { body: {} });
  if (enrollment.status !== 201) throw new Error(`agent-enrollment: ${enrollment.status} ${enrollment.text}`);
  const dir = mkdtempSync(path.join(work, 'agent-'));
  const r = await edgehubCli(['agent', 'enroll', enrollment.json.jwt, '--dir', dir]);
  if (r.code !== 0) throw new Error(`agent enroll: ${r.stderr}`);
  return { dir, id: JSON.parse(readFileSync(path.join(dir, 'agent.json'), 'utf8')).id };
}

export interface RunningAgent {
  child: ChildProcess;
  lines: string[];
  /** Resolves when a line matching `pattern` was printed (now or later). */
  printed(pattern: RegExp, timeoutMs?: number): Promise<string>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** `edgehub agent run` inside `ns`, dialing `edgePorts` on the host's side of the veth; the caller stops it. */
export function runAgent(ns: PrivateNetwork, dir: string, edgePorts: number[], extra: string[] = []): RunningAgent {
  return watched(
    ns.spawn(process.execPath, ['agent/bin/edgehub.js', 'agent', 'run', '--dir', dir, ...edgePorts.flatMap((p) => ['--edge', `${ns.hostIp}:${p}`]), ...extra]),
  );
}

/**
 * `edgehub agent run` on this host (it reaches the service's loopback address, as enrollment gave it), dialing
 * `edgePorts` on 127.0.0.1, with `env` added; the caller stops it.
 */
export function runAgentHere(dir: string, edgePorts: number[], env: Record<string, string> = {}): RunningAgent {
  const args = ['agent/bin/edgehub.js', 'agent', 'run', '--dir', dir, ...edgePorts.flatMap((p) => ['--edge', `127.0.0.1:${p}`])];
  return watched(spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
}

function watched(child: ChildProcess): RunningAgent {
  const lines: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let buffered = '';
  child.stdout!.on('data', (d: Buffer) => {
    buffered += d.toString();
    const parts = buffered.split('\n');
    buffered = parts.pop()!;
    lines.push(...parts);
  });
  child.stderr!.on('data', (d: Buffer) =>
    lines.push(
      ...d
        .toString()
        .trim()
        .split('\n')
        .map((l) => `stderr: ${l}`),
    ),
  );
  return {
    child,
    lines,
    printed: (pattern, timeoutMs = 20_000) =>
      waitFor(async () => lines.find((l) => pattern.test(l)), { timeoutMs, what: `agent printing ${pattern} (printed: ${lines.join(' | ')})` }),
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) await stopChild(child, 'an agent', { signal: signal as NodeJS.Signals, graceMs: 15_000 });
      return exited;
    },
  };
}
