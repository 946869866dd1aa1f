/**
 * A TCP connection's step 4, for a mutual-TLS share: TLS with the share host's certificate (whatever name the client
 * sends by SNI, or none: a TLS server's SNI callback is not asked when the client names none, so the socket is given
 * the share's context from the start), then a client certificate of the share's hub, checked as a request's is
 * (guard.ts identityOf). A client refused is closed before a byte reaches the target.
 */
import tls from 'node:tls';
import { logger } from '../../shared/logger.js';
import type { Refusal, StepOf, Verdict } from './exchange.js';
import { identityOf } from './guard.js';
import type { ConnectionParts } from './parts.js';
import type { TcpExchange } from './tcpExchange.js';

const noCertificate: Refusal = { code: 'EH_MTLS_UNAVAILABLE', message: 'no certificate for the share host' };

export const tcpMutualTls =
  (parts: ConnectionParts): StepOf<TcpExchange> =>
  (x) => {
    const route = x.route!;
    if (!route.mutualTls) return undefined;
    const { host } = x.port;
    const secureContext = parts.contextFor(host);
    if (!secureContext) {
      logger.warn({ zId: route.zId, host }, 'edge: TCP connection refused: no certificate for the share host');
      return noCertificate;
    }
    const secure = new tls.TLSSocket(x.connection, { isServer: true, secureContext, requestCert: true, rejectUnauthorized: false });
    // the connection from now on: refused, closed or carried, it is the TLS socket
    x.connection = secure;
    secure.on('error', () => secure.destroy());
    // a handshake that does not finish is a silent connection too
    secure.setTimeout(x.port.idleMs, () => secure.destroy());
    return new Promise<Verdict>((resolve) => {
      // a connection closed in its handshake ends the run (it is gone)
      secure.once('close', () => resolve(undefined));
      secure.once('secure', () => {
        const identity = identityOf(parts, route, secure, true);
        if (identity.ok) return resolve(undefined);
        logger.info({ zId: route.zId, reason: identity.message }, 'edge: TCP connection refused (mutual TLS)');
        resolve({ code: identity.code, message: identity.message });
      });
    });
  };
