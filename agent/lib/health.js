/**
 * Target health as this agent sees it: every PROBE_MS it opens a TCP connection to each target it carries (the
 * targets its edges told it, as far as its --allow patterns admit them) and closes it at once; a target whose share
 * has an HTTP health check is probed with that instead (its method and path; up when the answer has its status). A target goes down
 * after DOWN_AFTER failed probes in a row and comes back after UP_AFTER good ones (a flap does not move traffic), and
 * the pool state (agent/lib/pool.js) tells the edges, which then send that target's requests to other agents.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { parseAuthority } from './protocol.js';

/** EDGEHUB_AGENT_PROBE_MS overrides it (at least 100). */
const PROBE_MS = Math.max(100, Number(process.env.EDGEHUB_AGENT_PROBE_MS) || 3_000);
const PROBE_TIMEOUT_MS = Math.min(2_000, PROBE_MS);
const DOWN_AFTER = 3;
const UP_AFTER = 2;

/**
 * One TCP connect to `authority`; whether it succeeded within the timeout.
 * @param {string} authority
 * @returns {Promise<boolean>}
 */
function probe(authority) {
  const target = parseAuthority(authority);
  if (!target) return Promise.resolve(false);
  return new Promise((resolve) => {
    const socket = net.connect({ host: target.host, port: target.port });
    const done = (/** @type {boolean} */ ok) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), PROBE_TIMEOUT_MS);
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * One HTTP request of `check` to `authority`; whether it was answered with the check's status within its timeout.
 * @param {string} authority
 * @param {import('./protocol.js').TargetCheck} check
 * @returns {Promise<boolean>}
 */
function probeHttp(authority, check) {
  const target = parseAuthority(authority);
  if (!target) return Promise.resolve(false);
  return new Promise((resolve) => {
    const client = check.tls ? https : http;
    const timeout = Math.min(check.timeoutMs, Math.max(PROBE_MS, 1000));
    const req = client.request(
      {
        host: target.host,
        port: target.port,
        method: check.method,
        path: check.path,
        headers: { host: check.host, 'user-agent': 'edgehub-agent health' },
        servername: net.isIP(check.host) ? undefined : check.host,
        agent: false,
        timeout,
      },
      (res) => {
        res.resume();
        req.destroy();
        resolve(res.statusCode === check.status);
      },
    );
    req.once('timeout', () => req.destroy(new Error('timed out')));
    req.once('error', () => resolve(false));
    req.end();
  });
}

export class TargetHealth {
  /** Per target: consecutive failures or successes against its current state. @type {Map<string, { down: boolean; streak: number }>} */
  seen = new Map();
  /** @type {NodeJS.Timeout | undefined} */
  timer;
  probing = false;

  /**
   * @param {() => Iterable<string>} targets The targets to probe now.
   * @param {(target: string) => import('./protocol.js').TargetCheck | undefined} checkOf A target's HTTP check, if it has one.
   * @param {import('./pool.js').PoolState} pool
   * @param {(line: string) => void} log
   */
  constructor(targets, checkOf, pool, log) {
    this.targets = targets;
    this.checkOf = checkOf;
    this.pool = pool;
    this.log = log;
  }

  start() {
    this.timer = setInterval(() => void this.round(), PROBE_MS);
    this.timer.unref();
    return this;
  }

  stop() {
    clearInterval(this.timer);
  }

  async round() {
    if (this.probing) return;
    this.probing = true;
    try {
      const now = new Set(this.targets());
      for (const gone of [...this.seen.keys()].filter((t) => !now.has(t))) {
        this.seen.delete(gone);
        this.pool.setDown(gone, false);
      }
      const results = await Promise.all(
        [...now].map(async (t) => {
          const check = this.checkOf(t);
          return /** @type {const} */ ([t, await (check ? probeHttp(t, check) : probe(t))]);
        }),
      );
      for (const [target, ok] of results) this.record(target, ok);
    } finally {
      this.probing = false;
    }
  }

  /** @param {string} target @param {boolean} ok */
  record(target, ok) {
    const state = this.seen.get(target) ?? { down: false, streak: 0 };
    this.seen.set(target, state);
    // a streak counts probes that disagree with the current state
    state.streak = ok === state.down ? state.streak + 1 : 0;
    if (state.streak >= (state.down ? UP_AFTER : DOWN_AFTER)) {
      state.down = !state.down;
      state.streak = 0;
      const how = this.checkOf(target) ? 'HTTP check' : 'TCP';
      this.log(
        state.down
          ? `target ${target} is down (${DOWN_AFTER} failed ${how} probes): the edges send its requests to other agents`
          : `target ${target} is up again`,
      );
      this.pool.setDown(target, state.down);
    }
  }
}
