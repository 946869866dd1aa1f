/**
 * What this agent tells every edge about itself as a member of its environment's pool: its weight and priority
 * (`--weight`, `--priority`, fixed for the run), whether it is draining (`edgehub agent drain` or SIGTERM), and the
 * targets it finds down (agent/lib/health.js). The edges choose among their connected agents by it: only those not
 * draining and not reporting the share's target down, of the lowest priority present, spread by weight.
 */

import { PRIORITY, WEIGHT } from './protocol.js';

export { PRIORITY, WEIGHT };

/**
 * An integer option within its range; one line naming the option and the range otherwise.
 * @param {string} option e.g. --weight
 * @param {string | undefined} text
 * @param {{ min: number; max: number; default: number }} range
 * @returns {number}
 */
export function poolNumber(option, text, range) {
  if (text === undefined) return range.default;
  if (!/^\d{1,3}$/.test(text.trim()) || Number(text) < range.min || Number(text) > range.max) {
    throw new Error(`${option} '${text}': expected a whole number from ${range.min} to ${range.max}`);
  }
  return Number(text);
}

/**
 * `--drain-timeout`: seconds (`30`, `30s`) or minutes (`2m`); the default 30 s.
 * @param {string | undefined} text
 * @returns {number} milliseconds
 */
export function drainTimeout(text) {
  if (text === undefined) return 30_000;
  const match = /^(\d{1,5})(s|m)?$/.exec(text.trim());
  if (!match) throw new Error(`--drain-timeout '${text}': expected seconds (30, 30s) or minutes (2m)`);
  return Number(match[1]) * (match[2] === 'm' ? 60_000 : 1000);
}

/** @typedef {{ weight: number; priority: number; draining: boolean; down: string[] }} PoolSnapshot */

export class PoolState {
  draining = false;
  /** Targets (host:port) found down. @type {Set<string>} */
  down = new Set();
  /** @type {Set<(snapshot: PoolSnapshot) => void>} */
  listeners = new Set();

  /**
   * @param {number} [weight]
   * @param {number} [priority]
   */
  constructor(weight = WEIGHT.default, priority = PRIORITY.default) {
    this.weight = weight;
    this.priority = priority;
  }

  /** @returns {PoolSnapshot} */
  snapshot() {
    return { weight: this.weight, priority: this.priority, draining: this.draining, down: [...this.down].sort() };
  }

  /** @param {(snapshot: PoolSnapshot) => void} listener @returns {() => void} the unsubscribe */
  watch(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  changed() {
    const now = this.snapshot();
    for (const listener of this.listeners) listener(now);
  }

  drain() {
    if (this.draining) return;
    this.draining = true;
    this.changed();
  }

  /** @param {string} target @param {boolean} down */
  setDown(target, down) {
    if (down === this.down.has(target)) return;
    if (down) this.down.add(target);
    else this.down.delete(target);
    this.changed();
  }
}
