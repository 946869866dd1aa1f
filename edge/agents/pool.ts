/**
 * Which of an environment's agent connections carries a share's new request or stream (its pool): only connections
 * that serve the share's target (several `edgehub share` processes may share one agent identity, each carrying its
 * own target), that are not draining and do not report that target down; of those, the lowest priority present;
 * among them, spread by weight (smooth weighted round robin, as nginx does: every pick adds each candidate's weight
 * to its running score, takes the highest and takes the total off it, so 1:3 gives B B A B, B B A B...).
 *
 * What a member says of itself comes from the agent (its answer to its targets and its state stream, agent/lib/
 * protocol.js) and is checked here: numbers out of range fall back to the defaults, and a target reported down that
 * is not one of its environment's is ignored (and logged by the caller).
 */

import { PRIORITY, WEIGHT } from '../../agent/lib/protocol.js';

export interface PoolMember {
  weight: number;
  priority: number;
  draining: boolean;
  /** Targets (host:port) the agent reports down. */
  down: Set<string>;
  /** Targets this connection carries; undefined: all of its environment's (an agent that does not say). */
  serves: Set<string> | undefined;
  /** The smooth weighted round robin's running score. */
  current: number;
}

export const poolDefaults = (): PoolMember => ({ weight: WEIGHT.default, priority: PRIORITY.default, draining: false, down: new Set(), serves: undefined, current: 0 });

const inRange = (value: unknown, range: { min: number; max: number; default: number }) =>
  Number.isInteger(value) && (value as number) >= range.min && (value as number) <= range.max ? (value as number) : range.default;

const authorities = (list: unknown): string[] => (Array.isArray(list) ? list.filter((t): t is string => typeof t === 'string' && t.length <= 300).slice(0, 10_000) : []);

/**
 * Takes what the agent said of itself (`{weight, priority, draining, down, serves?}`); `known` are the targets of its
 * environment it was told. Returns the targets it reported down that are not among them (ignored).
 */
export function applyState(member: PoolMember, body: unknown, known: ReadonlySet<string>): string[] {
  if (!body || typeof body !== 'object') return [];
  const said = body as Record<string, unknown>;
  member.weight = inRange(said.weight, WEIGHT);
  member.priority = inRange(said.priority, PRIORITY);
  member.draining = said.draining === true;
  const foreign: string[] = [];
  const down = new Set<string>();
  for (const target of authorities(said.down)) {
    if (known.has(target)) down.add(target);
    else foreign.push(target);
  }
  member.down = down;
  if ('serves' in said) member.serves = new Set(authorities(said.serves));
  return foreign;
}

/** Whether the member carries `authority` at all (whatever its state). */
export const serves = (member: PoolMember, authority: string) => !member.serves || member.serves.has(authority);

/**
 * The member to carry a new stream to `authority` among `usable` (connected and with room), or why there is none:
 * 'none' when every one is draining (or there is none), 'unserved' when none that is not draining serves it, 'down'
 * when every one that serves it reports it down.
 */
export function choose<M extends PoolMember>(usable: Iterable<M>, authority: string): M | 'none' | 'unserved' | 'down' {
  let up: M[] = [];
  let anyOpen = false;
  let anyServing = false;
  let tier = Number.POSITIVE_INFINITY;
  for (const m of usable) {
    if (m.draining) continue;
    anyOpen = true;
    if (!serves(m, authority)) continue;
    anyServing = true;
    if (m.down.has(authority)) continue;
    if (m.priority < tier) {
      tier = m.priority;
      up = [];
    }
    if (m.priority === tier) up.push(m);
  }
  if (!up.length) return anyServing ? 'down' : anyOpen ? 'unserved' : 'none';
  if (up.length === 1) return up[0];
  let total = 0;
  let best = up[0];
  for (const m of up) {
    m.current += m.weight;
    total += m.weight;
    if (m.current > best.current) best = m;
  }
  best.current -= total;
  return best;
}
