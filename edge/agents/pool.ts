/**
 * Which of an environment's agent connections carries a share's new request or stream (its pool): only connections
 * that serve the share's target (several `edgehub share` processes may share one agent identity, each carrying its
 * own target), that are not draining and do not report that target down; of those, the lowest priority present;
 * among them, spread by weight (smooth weighted round robin, as nginx does: every pick adds each candidate's weight
 * to its running score, takes the highest and takes the total off it, so 1:3 gives B B A B, B B A B...).
 *
 * What a member says of itself comes from the agent (its answer to its targets and its state stream, agent/lib/
 * protocol.js, read here) and is checked here: numbers out of range fall back to the defaults, and a target reported down that
 * is not one of its environment's is ignored (and logged by the caller).
 */

import http2, { type ClientHttp2Session } from 'node:http2';
import { PRIORITY, STATE_PATH, WEIGHT } from 'edgehub-agent/protocol';
import { logger } from '../../shared/logger.js';
import type { FloodWatch } from './floods.js';

/** Largest line of an agent's state stream. */
const MAX_STATE_LINE = 256 << 10;

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

export const poolDefaults = (): PoolMember => ({
  weight: WEIGHT.default,
  priority: PRIORITY.default,
  draining: false,
  down: new Set(),
  serves: undefined,
  current: 0,
});

const inRange = (value: unknown, range: { min: number; max: number; default: number }) =>
  Number.isInteger(value) && (value as number) >= range.min && (value as number) <= range.max ? (value as number) : range.default;

const authorities = (list: unknown): string[] =>
  Array.isArray(list) ? list.filter((t): t is string => typeof t === 'string' && t.length <= 300).slice(0, 10_000) : [];

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
const serves = (member: PoolMember, authority: string) => !member.serves || member.serves.has(authority);

/**
 * The members that may carry a new stream to `authority` among `usable` (connected and with room): those that serve
 * it, are not draining and do not report it down, of the lowest priority among them. Or why there is none: 'none'
 * when every one is draining (or there is none), 'unserved' when none that is not draining serves it, 'down' when
 * every one that serves it reports it down.
 */
export function eligible<M extends PoolMember>(usable: Iterable<M>, authority: string): M[] | 'none' | 'unserved' | 'down' {
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
  return up;
}

/** The eligible member (above) to carry a new stream, by weight, or why there is none. */
export function choose<M extends PoolMember>(usable: Iterable<M>, authority: string): M | 'none' | 'unserved' | 'down' {
  const up = eligible(usable, authority);
  return typeof up === 'string' ? up : byWeight(up);
}

/** Smooth weighted round robin among `up` (not empty). */
export function byWeight<M extends PoolMember>(up: M[]): M {
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

/**
 * Opens the agent's state stream (GET /edgehub/v1/state) and hands each JSON line to `take` for as long as the
 * connection lasts; an older agent answers 404 and its state stays what its answer to its targets said.
 */
export function readStateStream(link: { session: ClientHttp2Session; floods: FloodWatch; agent: { id: string } }, take: (said: unknown) => void): void {
  if (link.session.destroyed || link.session.closed) return;
  let stream: http2.ClientHttp2Stream;
  try {
    stream = link.session.request({ ':method': 'GET', ':path': STATE_PATH });
    link.floods.track(stream);
  } catch {
    return;
  }
  stream.on('error', () => undefined);
  stream.end();
  stream.once('response', (headers) => {
    if (Number(headers[':status']) !== 200) return void stream.resume();
    let buffered = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      buffered += chunk;
      let newline = buffered.indexOf('\n');
      while (newline >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        let said: unknown;
        try {
          said = JSON.parse(line);
        } catch {
          logger.warn({ agentId: link.agent.id }, 'edge: agent state line is not JSON; ignored');
        }
        if (said !== undefined) take(said);
        newline = buffered.indexOf('\n');
      }
      if (buffered.length > MAX_STATE_LINE) stream.close(http2.constants.NGHTTP2_CANCEL);
    });
  });
}
