/** A TCP connection's step 1: the port it came to names the share (edge/tcp/shares.ts listens on one port per share). */
import type { StepOf } from './exchange.js';
import type { TcpExchange } from './tcpExchange.js';

export const portRouted = (): StepOf<TcpExchange> => (x) => {
  x.route = x.port.route;
  return undefined;
};
