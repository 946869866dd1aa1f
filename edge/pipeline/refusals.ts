/**
 * What makes a request unfit to route before any share is looked at: answered 400 as nginx answers the same bytes,
 * or 508 for a request that already passed through this deployment's edges.
 */
import { createHmac } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { ErrorCode } from '../../shared/errors.js';
import { countOf } from '../headers.js';
import { routingHost } from '../state/routes.js';

/**
 * This deployment's hop mark in `Via`: the same for every edge process sharing the secret key, so a request that
 * comes back to any of them (a share whose target is an edge address, directly or through other proxies) is
 * refused with 508 instead of looping until the file descriptors run out.
 */
export function hopMark(secretKey: Buffer): string {
  return `edgehub-${createHmac('sha256', secretKey).update('edge hop mark').digest('hex').slice(0, 12)}`;
}

/** Why the request is refused (code, message), or undefined when it may be routed. `mark`: hopMark(). */
export function requestRefusal(req: IncomingMessage, host: string, mark: string): [ErrorCode, string] | undefined {
  if (countOf(req.rawHeaders, 'host') > 1) return ['EH_REQUEST_MALFORMED', 'the request has more than one Host header'];
  const url = req.url ?? '/';
  if (!url.startsWith('/')) {
    let authority: string | undefined;
    try {
      authority = /^https?:\/\//i.test(url) ? routingHost(new URL(url).host) : undefined;
    } catch {
      authority = undefined;
    }
    if (authority === undefined || authority !== host)
      return ['EH_REQUEST_MALFORMED', 'the request target must be a path, or an absolute URL of the Host it names'];
  }
  const via = req.headers.via;
  if (via && via.includes(mark)) return ['EH_LOOP_DETECTED', "the request already passed through this edge: the share's target leads back to the edge"];
  return undefined;
}
