/**
 * The process supervisor of `npm start` (and of an edge process that runs HUB_EDGE_WORKERS workers): runs each child (web, worker, clock, ...) and heals it. A child that dies
 * is restarted after an exponential backoff (1 s, 2 s, 4 s ... up to 30 s; back to 1 s once a child has stayed up
 * for 30 s) with a log line saying so, while the other children keep serving. A child that keeps dying soon after
 * it starts is reported as crash-looping (and still retried at the longest backoff). Only `stop()` (Ctrl-C or
 * SIGTERM in scripts/start.ts) stops everything.
 *
 * Children are node:cluster workers, so several instances of one child (WEB_CONCURRENCY web processes) share its
 * listening port; `SCHED_NONE` lets the kernel hand connections straight to them (no proxying through this
 * process). A child also exits by itself when this process dies (the cluster channel closes).
 */
import cluster, { type Worker } from 'node:cluster';
import { backoffMs } from './backoff.js';

export interface ChildSpec {
  /** Log name and HUB_PROCESS of the child. */
  name: string;
  /** The script it runs: `node <script>` for JavaScript, `node --import tsx <script>` for TypeScript. */
  script: string;
  /** How many processes of it run at once (default 1). */
  instances?: number;
  /** Settings of its instance number (0, 1, ...), which a restarted instance keeps. */
  instanceEnv?: (index: number) => NodeJS.ProcessEnv;
  /** Node flags of its own, after those every child gets. */
  execArgv?: string[];
}

interface SupervisorOptions {
  env: NodeJS.ProcessEnv;
  /** First restart delay; doubled on each consecutive crash (default 1000 ms). */
  backoffMs?: number;
  /** Longest restart delay (default 30000 ms). */
  maxBackoffMs?: number;
  /** Each child its own metrics port from this one on, in the order of the list (default: none). */
  metricsBasePort?: number;
  /** A child that stayed up this long counts as healthy again (default 30000 ms). */
  stableMs?: number;
  /** This many consecutive early exits are reported as a crash loop (default 5). */
  crashLoopAfter?: number;
  log?: (line: string) => void;
  /** Node flags for every child (e.g. the garbage collector's). */
  execArgv?: string[];
}

interface Slot {
  spec: ChildSpec;
  label: string;
  env: NodeJS.ProcessEnv;
  worker?: Worker;
  startedAt: number;
  crashes: number;
  restarts: number;
  timer?: NodeJS.Timeout;
}

/** The message a child's onShutdown (shared/shutdown.ts) treats like SIGTERM. */
const SHUTDOWN_MESSAGE = 'edgehub:shutdown';

const describeExit = (code: number | null, signal: string | null) => (signal ? `signal ${signal}` : `exit code ${code}`);
const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;
const delayText = (ms: number) => (ms < 1000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`);

export class Supervisor {
  private readonly slots: Slot[] = [];
  private stopping = false;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly stableMs: number;
  private readonly crashLoopAfter: number;
  private readonly log: (line: string) => void;
  private readonly execArgv: string[];

  constructor(specs: ChildSpec[], options: SupervisorOptions) {
    const env = options.env;
    this.backoffMs = options.backoffMs ?? 1000;
    this.maxBackoffMs = options.maxBackoffMs ?? 30_000;
    this.stableMs = options.stableMs ?? 30_000;
    this.crashLoopAfter = options.crashLoopAfter ?? 5;
    this.log = options.log ?? ((line) => console.error(line));
    this.execArgv = options.execArgv ?? [];
    const metricsBase = options.metricsBasePort;
    for (const spec of specs) {
      const n = spec.instances ?? 1;
      for (let i = 1; i <= n; i++) {
        const childEnv: NodeJS.ProcessEnv = { ...env, HUB_PROCESS: spec.name, ...spec.instanceEnv?.(i - 1) };
        // each child its own metrics port: base, base+1, ... in the order of the list
        if (metricsBase !== undefined) childEnv.HUB_METRICS_PORT = String(metricsBase + this.slots.length);
        this.slots.push({ spec, label: n > 1 ? `${spec.name}.${i}` : spec.name, env: childEnv, startedAt: 0, crashes: 0, restarts: 0 });
      }
    }
    // and each child knows them all: none may be a share's target (shared/ownEndpoints.ts)
    if (metricsBase) for (const slot of this.slots) slot.env.HUB_METRICS_PORTS = `${metricsBase}-${metricsBase + this.slots.length - 1}`;
    cluster.schedulingPolicy = cluster.SCHED_NONE;
  }

  /** Starts every child. */
  start(): void {
    for (const slot of this.slots) this.spawn(slot);
  }

  /** Which child runs where: `[{label, pid, metricsPort}]`. */
  children(): { label: string; pid?: number; metricsPort?: string }[] {
    return this.slots.map((s) => ({ label: s.label, pid: s.worker?.process.pid, metricsPort: s.env.HUB_METRICS_PORT }));
  }

  private spawn(slot: Slot): void {
    slot.timer = undefined;
    const tsx = slot.spec.script.endsWith('.ts') && !this.execArgv.some((a) => /(^|=)tsx$/.test(a)) ? ['--import', 'tsx'] : [];
    cluster.setupPrimary({ exec: slot.spec.script, execArgv: [...this.execArgv, ...(slot.spec.execArgv ?? []), ...tsx], silent: false });
    const worker = cluster.fork(slot.env);
    slot.worker = worker;
    slot.startedAt = Date.now();
    const port = slot.env.HUB_METRICS_PORT ? `, metrics on port ${slot.env.HUB_METRICS_PORT}` : '';
    this.log(`edgehub: ${slot.label} started (pid ${worker.process.pid}${port})`);
    worker.on('error', () => undefined); // a send to a dead child; its exit follows
    worker.once('exit', (code, signal) => this.onExit(slot, worker, code, signal));
  }

  private onExit(slot: Slot, worker: Worker, code: number | null, signal: string | null): void {
    if (slot.worker !== worker) return;
    slot.worker = undefined;
    if (this.stopping) return;
    const uptime = Date.now() - slot.startedAt;
    slot.crashes = uptime >= this.stableMs ? 1 : slot.crashes + 1;
    slot.restarts++;
    const delay = backoffMs(slot.crashes, { minMs: this.backoffMs, maxMs: this.maxBackoffMs });
    this.log(
      `edgehub: ${slot.label} (pid ${worker.process.pid}) exited with ${describeExit(code, signal)} after ${seconds(uptime)}; ` +
        `restarting it in ${delayText(delay)} (restart #${slot.restarts}); the other processes keep running`,
    );
    if (slot.crashes >= this.crashLoopAfter) {
      this.log(
        `edgehub: ${slot.label} is CRASH-LOOPING: it died ${slot.crashes} times in a row, each within ${seconds(this.stableMs)} of starting ` +
          `(last: ${describeExit(code, signal)}). Its own output above says why; retrying every ${delayText(this.maxBackoffMs)} at most.`,
      );
    }
    slot.timer = setTimeout(() => this.spawn(slot), delay);
  }

  /** Stops every child: asks each to shut down gracefully, SIGKILLs what is still running after `graceMs`. */
  async stop(graceMs = 30_000): Promise<void> {
    this.stopping = true;
    await Promise.all(
      this.slots.map(async (slot) => {
        if (slot.timer) clearTimeout(slot.timer);
        const worker = slot.worker;
        if (!worker || worker.isDead()) return;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => worker.process.kill('SIGKILL'), graceMs);
          worker.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          // by message, not by signal: a child that also got the terminal's SIGINT must not take it as a second signal
          if (worker.isConnected()) worker.send(SHUTDOWN_MESSAGE);
          else worker.process.kill('SIGTERM');
        });
      }),
    );
  }
}
