/**
 * Sticky sessions per share (`affinity`): which of the usable agents carries a client's request.
 *
 * - 'client-ip': rendezvous hashing of the client's address over the usable agents (weighted): a client keeps its
 *   agent while that agent is usable, and only the clients of an agent that goes move. The address is the one the
 *   share policy judges: behind a proxy in HUB_EDGE_TRUSTED_PROXIES, the client its X-Forwarded-For names.
 * - 'cookie': the edge sets `edgehub_affinity` (host-only: no Domain; HttpOnly; SameSite=Lax; Secure over TLS) to an
 *   opaque value naming the agent chosen: an HMAC of the share and the agent's id under a key derived from the
 *   service's secret key, so a client can neither read which agent it names nor make one up. A cookie naming no
 *   usable agent of the share (a foreign, unknown or gone one) is ignored: the request is spread as usual and the
 *   answer sets a new cookie.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { clientAddress, type ForwardContext } from '../headers.js';
import type { ShareRoute, Sticky } from '../types.js';

const AFFINITY_COOKIE = 'edgehub_affinity';

/** The key the cookie values are made with, derived from the service's secret key. */
export const affinityKey = (secretKey: Buffer): Buffer => createHmac('sha256', secretKey).update('edgehub agent affinity cookie v1').digest();

/** The cookie value naming `agentId` for share `zId`. */
export const affinityToken = (key: Buffer, zId: string, agentId: string): string =>
  createHmac('sha256', key).update(`${zId}\n${agentId}`).digest('base64url').slice(0, 32);

/**
 * The request's claim to an agent, for a share with affinity; undefined without. `client-ip` takes the client's
 * address as the policy judges it (`ctx.clientAddress`: behind a trusted proxy, from its X-Forwarded-For), else the peer's.
 */
export function stickyOf(req: IncomingMessage, route: ShareRoute, ctx: Pick<ForwardContext, 'secure' | 'clientAddress'>): Sticky | undefined {
  const affinity = route.affinity;
  if (affinity !== 'client-ip' && affinity !== 'cookie') return undefined;
  let cookie: string | undefined;
  if (affinity === 'cookie') {
    const header = req.headers.cookie;
    for (const part of (Array.isArray(header) ? header.join('; ') : (header ?? '')).split(';')) {
      const eq = part.indexOf('=');
      if (eq > 0 && part.slice(0, eq).trim() === AFFINITY_COOKIE) cookie = part.slice(eq + 1).trim();
    }
  }
  return { affinity, clientIp: ctx.clientAddress ?? clientAddress(req), cookie, secure: ctx.secure };
}

/** The Set-Cookie value naming the chosen agent (host-only: no Domain attribute). */
export const affinityCookie = (token: string, secure: boolean): string =>
  `${AFFINITY_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;

/** Whether `cookie` is the token for `agentId` (compared in constant time). */
export function names(key: Buffer, zId: string, agentId: string, cookie: string): boolean {
  const expected = Buffer.from(affinityToken(key, zId, agentId));
  const given = Buffer.from(cookie);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Rendezvous hashing, weighted: the member with the highest score for `clientIp` (stable while the set is). */
export function byClient<M extends { weight: number; agent: { id: string } }>(members: M[], clientIp: string): M {
  let best = members[0];
  let bestScore = Number.NEGATIVE_INFINITY;
  for (const m of members) {
    const h = createHash('sha256').update(`${clientIp}\n${m.agent.id}`).digest().readUIntBE(0, 6);
    // a uniform draw in (0, 1), weighted: -w / ln(u) (highest random weight)
    const u = (h + 1) / (2 ** 48 + 1);
    const score = -m.weight / Math.log(u);
    if (score > bestScore) {
      bestScore = score;
      best = m;
    }
  }
  return best;
}
