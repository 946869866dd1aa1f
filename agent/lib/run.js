/**
 * `edgehub agent run`: one link (link.js) per edge. The edges given (each `--edge`, else the identity's) are dialled
 * for as long as the agent runs. Every edge also tells its agents the agent addresses of every live edge (and its
 * own): the agent dials each live edge it is not connected to yet, and stops dialling a found edge once it has left
 * the live set, so an agent that knows one edge serves on all of them without a restart.
 */
import { EnrollError } from './errors.js';
import { certificateExpiry } from './identity.js';
import { renew, renewalDue } from './renew.js';
import { TargetHealth } from './health.js';
import { EdgeLink } from './link.js';
import { PoolState } from './pool.js';
import { parseAuthority } from './protocol.js';

const DAY_MS = 24 * 60 * 60_000;
/** How often the agent looks whether its certificate is due for renewal (EDGEHUB_AGENT_RENEW_CHECK_MS overrides it). */
const RENEW_CHECK_MS = Math.max(1000, Number(process.env.EDGEHUB_AGENT_RENEW_CHECK_MS) || 60 * 60_000);
/** How long before its certificate expires an agent starts saying so (at start, then once a day). */
const WARN_BEFORE_MS = 30 * DAY_MS;

/**
 * What to tell about the certificate's expiry now: an error once it has expired (every edge refuses it), a warning
 * within WARN_BEFORE_MS of it, else nothing.
 * @param {import('./identity.js').AgentIdentity} identity
 * @param {number} [now]
 * @returns {{ expired: boolean; message: string } | undefined}
 */
function expiryNotice(identity, now = Date.now()) {
  const expiry = certificateExpiry(identity);
  const again = `enroll this machine again (a new JWT: the console, or POST /hub/${identity.hubId}/environments/${identity.envZId}/agent-enrollment) with edgehub agent enroll <jwt> --dir <new folder>, then revoke agent ${identity.id}`;
  if (expiry <= now)
    return { expired: true, message: `the certificate of agent ${identity.id} expired at ${new Date(expiry).toISOString()}: the edges refuse it; ${again}` };
  if (expiry - now <= WARN_BEFORE_MS) {
    const left = expiry - now;
    const [n, unit] =
      left >= DAY_MS
        ? [Math.floor(left / DAY_MS), 'day']
        : left >= 3_600_000
          ? [Math.floor(left / 3_600_000), 'hour']
          : [Math.max(1, Math.floor(left / 60_000)), 'minute'];
    return {
      expired: false,
      message: `warning: the certificate of agent ${identity.id} expires at ${new Date(expiry).toISOString()} (in ${n} ${unit}${n === 1 ? '' : 's'}); unless it is renewed before then, ${again}`,
    };
  }
  return undefined;
}

/**
 * @typedef {object} RunOptions
 * @property {import('./identity.js').AgentIdentity} identity
 * @property {string[]} [edges] Edge addresses (host:port) to dial instead of the identity's.
 * @property {import('./protocol.js').AllowPattern[]} [allow]
 * @property {(line: string) => void} log
 * @property {string} [dir] The identity's folder: given, the agent renews its certificate there when it is due.
 * @property {number} [weight] Its share of the environment's new requests against its peers' (1-100, default 1).
 * @property {number} [priority] 0-9, default 0: edges use agents of a higher number only when none of a lower is usable.
 */

export class AgentRunner {
  /** @type {Map<string, EdgeLink>} */
  links = new Map();
  stopped = false;

  /** @param {RunOptions} options */
  constructor(options) {
    this.options = options;
    const edges = options.edges?.length ? options.edges : options.identity.edges;
    if (!edges.length) throw new Error('no edge address to dial: the identity lists none; pass --edge HOST:PORT');
    this.given = [...new Set(edges)];
    this.pool = new PoolState(options.weight, options.priority);
    this.linkOptions = { identity: options.identity, allow: options.allow, log: options.log, onEdges: this.learn.bind(this), pool: this.pool };
  }

  /** Dials the edges; refuses to start with an expired certificate, and says daily when it is about to expire. */
  start() {
    const notice = expiryNotice(this.options.identity);
    if (notice?.expired) throw new EnrollError(notice.message);
    if (notice) this.options.log(notice.message);
    this.expiryTimer = setInterval(() => {
      const now = expiryNotice(this.options.identity);
      if (now) this.options.log(now.message);
    }, DAY_MS);
    this.expiryTimer.unref();
    for (const address of this.given) this.links.set(address, new EdgeLink(address, this.linkOptions, 'given').start());
    this.health = new TargetHealth(
      () => this.carried(),
      (target) => {
        for (const link of this.links.values()) if (link.checks.has(target)) return link.checks.get(target);
        return undefined;
      },
      this.pool,
      this.options.log,
    ).start();
    if (this.options.dir) {
      this.renewTimer = setInterval(() => void this.renewIfDue(), RENEW_CHECK_MS);
      this.renewTimer.unref();
      void this.renewIfDue();
    }
    return this;
  }

  /** @type {TargetHealth | undefined} */
  health;
  /** @type {NodeJS.Timeout | undefined} */
  expiryTimer;
  /** @type {NodeJS.Timeout | undefined} */
  renewTimer;
  renewing = false;

  /** Renews the certificate once a third of its validity is left; a failure is said and tried again at the next look. */
  async renewIfDue() {
    const { identity, dir, log } = this.options;
    if (this.renewing || this.stopped || !dir) return;
    this.renewing = true;
    try {
      if (!renewalDue(identity)) return;
      const end = await renew(dir, identity);
      log(`renewed the certificate of agent ${identity.id}: valid until ${end.toISOString()}`);
    } catch (err) {
      log(
        `could not renew the certificate of agent ${identity.id}: ${/** @type {Error} */ (err).message}; trying again in ${Math.round(RENEW_CHECK_MS / 60_000) || 1} min`,
      );
    } finally {
      this.renewing = false;
    }
  }

  /** Addresses of the edges dialled now (tests, status). */
  dialling() {
    return [...this.links.keys()];
  }

  /** An edge said which edges are live (and which addresses are its own): the links follow. */
  learn() {
    if (!this.stopped) this.reconcile();
  }

  /** The live edges: those the connected edges name (an edge that left drops out of every list once it expired). */
  live() {
    /** @type {Set<string>} */
    const live = new Set();
    for (const link of this.links.values()) if (link.up) for (const address of link.edges) live.add(address);
    return live;
  }

  /** Whether `address` is an edge another link already reaches (that link's edge publishes it as its own). @param {string} address */
  covered(address) {
    for (const link of this.links.values()) if (link.address !== address && link.self.includes(address)) return link;
    return undefined;
  }

  reconcile() {
    const live = this.live();
    for (const address of live) {
      if (this.links.has(address) || this.covered(address)) continue;
      this.options.log(`found edge ${address}; dialling it`);
      this.links.set(address, new EdgeLink(address, this.linkOptions, 'found').start());
    }
    for (const [address, link] of this.links) {
      if (link.origin !== 'found') continue;
      const by = this.covered(address);
      // left the live set, or the same edge is reached by a given address: stop dialling it
      if (!live.has(address) || (by && by.origin === 'given')) {
        this.links.delete(address);
        this.options.log(`stopped dialling edge ${address} (${live.has(address) ? `the same edge as ${by?.address}` : 'no longer live'})`);
        void link.stop();
      }
    }
  }

  /** The targets this agent carries: those its edges told it, as far as its --allow patterns admit them. */
  carried() {
    /** @type {Set<string>} */
    const out = new Set();
    for (const link of this.links.values()) for (const t of link.targets) if (!link.refusal(t, parseAuthority(t))) out.add(t);
    return out;
  }

  /** Streams the edges have open through this agent, on every connection. */
  active() {
    let n = 0;
    for (const link of this.links.values()) n += link.active;
    return n;
  }

  /**
   * Tells every edge this agent is draining (they send it nothing new), lets what is in flight finish (at most
   * `timeoutMs`), then stops. Resolves with whether everything finished in time.
   * @param {number} timeoutMs
   * @returns {Promise<boolean>}
   */
  async drain(timeoutMs) {
    this.pool.drain();
    const end = Date.now() + timeoutMs;
    // the edges hear of the drain first; a stream they opened before it is still carried
    await new Promise((resolve) => setTimeout(resolve, Math.min(1000, timeoutMs)));
    while (this.active() > 0 && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 100));
    const finished = this.active() === 0;
    await this.stop();
    return finished;
  }

  async stop() {
    clearInterval(this.expiryTimer);
    clearInterval(this.renewTimer);
    this.health?.stop();
    this.stopped = true;
    await Promise.all([...this.links.values()].map((l) => l.stop()));
  }
}
