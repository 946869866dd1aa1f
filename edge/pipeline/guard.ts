/**
 * What an admitted exchange's identity is, and the rule that keeps its open connection admitted (edge/revocation.ts):
 * asked again every second and after each access change, against the current routes, policy and certificates.
 */
import type { TLSSocket } from 'node:tls';
import type { Duplex } from 'node:stream';
import type { ErrorCode } from '../../shared/errors.js';
import { ipAdmits } from '../policy/compile.js';
import type { Guard } from '../revocation.js';
import type { ShareRoute } from '../types.js';
import type { Exchange } from './exchange.js';
import type { PipelineParts } from './parts.js';

type Identity = { ok: true; headers?: Record<string, string> } | { ok: false; code: ErrorCode; message: string };

/**
 * Whether the connection may reach `route`: its client certificate for a mutual-TLS share. `connection` is the one the
 * request came on, taken when the request arrived: revocation asks again later (a TCP connection's once its TLS
 * handshake ends).
 */
export function identityOf({ access }: Pick<PipelineParts, 'access'>, route: ShareRoute, connection: Duplex, secure: boolean): Identity {
  if (!route.mutualTls) return { ok: true };
  if (!secure)
    return { ok: false, code: 'EH_MTLS_REQUIRED', message: 'this share requires mutual TLS: connect with https and present a client certificate of its hub' };
  if (!access.mutualTls) return { ok: false, code: 'EH_MTLS_UNAVAILABLE', message: 'mutual TLS is not available on this edge' };
  const decision = access.mutualTls.check(route.hubId, connection as TLSSocket);
  if (!decision.ok) return decision;
  return { ok: true, headers: { 'x-client-certificate-name': decision.identity.name, 'x-client-certificate-fingerprint': decision.identity.fingerprint } };
}

/**
 * The rule that keeps the open connection of an admitted exchange `x` admitted: what it needs of the exchange is read
 * now (the rule outlives the exchange on a kept-alive connection and must not hold its response or recording).
 */
export function guardOf(parts: PipelineParts, x: Exchange): Guard {
  const { routes, gate, access } = parts;
  const { host, connection, secure, req, email, until } = x;
  const route = x.route!;
  return () => {
    if (until !== undefined && Date.now() >= until) return 'the login session is due to be checked again';
    const current = routes.lookup(host);
    if (!current || current.zId !== route.zId) return 'the share is no longer published at this address';
    const policy = current.policy;
    if (policy && (policy.allow || policy.deny) && !ipAdmits(policy, gate.addresses.of(req))) return "the share's IP rules no longer admit the client address";
    const identity = identityOf(parts, current, connection, secure);
    if (!identity.ok) return identity.message;
    if (email !== undefined && current.auth) {
      if (current.auth.id !== route.auth?.id) return "the share's auth provider changed";
      if (!access.login?.allows(email, current)) return `${email} may no longer reach the share`;
    }
    return undefined;
  };
}
