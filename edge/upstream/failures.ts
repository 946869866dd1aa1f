/**
 * How a target exchange fails, as the edge's answer. Every failure the edge itself detects is a DomainError
 * (shared/errors.ts) raised where it happens, with its final code and message: the egress check (EH_EGRESS_DENIED,
 * edge/egressHttp.ts), the agents (EH_NO_AGENT, EH_TARGET_DOWN_AT_AGENTS, EH_AGENT_REFUSED_TARGET,
 * EH_AGENT_TARGET_UNREACHABLE, edge/agents/), a request target or header the edge will not send (EH_REQUEST_MALFORMED,
 * edge/headers.ts and edge/upstream/paths.ts), and the timeouts and failures of a target it sees itself
 * (targetTimedOut and targetUnreachable below). `failure` passes those on as they are: the only errors it translates
 * are those that come from libraries (undici's connect, header and socket errors, node's socket errno codes, TLS).
 */
import { ANSWERS, DomainError } from '../../shared/errors.js';
import type { ShareRoute } from '../types.js';

/** The target (`host` as the share's target URL names it) did not answer in time. */
export const targetTimedOut = (host: string) => new DomainError('EH_TARGET_TIMEOUT', `the share's target ${host} did not answer in time`);

/** The target could not be reached, or answered what cannot be passed on; `reason` in short (an errno-style word). */
export const targetUnreachable = (host: string, reason: string) =>
  new DomainError('EH_TARGET_UNREACHABLE', `the share's target ${host} could not be reached (${reason})`);

/** The timeouts of libraries: node's connect (errno), undici's connect and answer head. */
const LIBRARY_TIMEOUTS = new Set(['ETIMEDOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * Why a target exchange failed, as the edge's answer: the edge's own error as it was raised (undici hands a
 * connector's error on as it is, fetch-style callers wrap it in `cause`), else a library's error translated here.
 */
export function failure(err: unknown, route: ShareRoute): DomainError {
  if (err instanceof DomainError) return err;
  const e = err as NodeJS.ErrnoException;
  const cause = (e.cause as NodeJS.ErrnoException | undefined) ?? e;
  if (cause instanceof DomainError) return cause;
  if (LIBRARY_TIMEOUTS.has(e.code ?? '') || LIBRARY_TIMEOUTS.has(cause.code ?? '')) return targetTimedOut(route.target.host);
  return targetUnreachable(route.target.host, cause.code ?? e.code ?? e.message);
}

/** A failure's `error` value, the kind the upstream-error counter is labelled with. */
export const failureKind = (f: DomainError) => ANSWERS[f.code].error;
