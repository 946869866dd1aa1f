/**
 * A TCP connection's step 2: the share's own bound on this process (HUB_EDGE_TCP_MAX_CONNECTIONS), apart from the
 * hub's HTTP admission (limits.ts), so that idle connections to a TCP share never make the hub's HTTP shares answer
 * 503. Counted before anything is read: in a TLS handshake or carried, every accepted socket counts until it closes.
 */
import { logThrottle } from '../../shared/logThrottle.js';
import { logger } from '../../shared/logger.js';
import type { Refusal, StepOf } from './exchange.js';
import type { ConnectionParts } from './parts.js';
import type { TcpExchange } from './tcpExchange.js';

const atBound: Refusal = { code: 'EH_HUB_OVERLOADED', message: 'the share has too many connections open on this edge' };
/** One line a minute per share, not one per connection. */
const atBoundSaid = logThrottle(60_000);

export const connectionBound =
  ({ maxConnections }: ConnectionParts): StepOf<TcpExchange> =>
  (x) => {
    const { port, connection } = x;
    if (port.sockets.size >= maxConnections) {
      atBoundSaid(port.route.zId, (repeated) =>
        logger.warn(
          { zId: port.route.zId, max: maxConnections, repeated },
          'edge: TCP share at its connection limit (HUB_EDGE_TCP_MAX_CONNECTIONS): new connections closed',
        ),
      );
      return atBound;
    }
    port.sockets.add(connection);
    connection.once('close', () => port.sockets.delete(connection));
    return undefined;
  };
