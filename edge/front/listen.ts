/** The edge's listening sockets: listen on a port (0: any free one) and the HTTP/1.1 server's timeouts. */
import http from 'node:http';
import type net from 'node:net';
import type { AddressInfo } from 'node:net';

export function listen(server: net.Server, port: number, host: string | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/**
 * The edge's HTTP/1.1 server: keep-alive as nginx's, no limit on a request's duration (uploads and downloads of any
 * size), a head that takes longer than `headersTimeoutMs` answered 408 and closed (checked every quarter of it, at
 * most every 30 s).
 */
export function httpServer(handler: http.RequestListener, headersTimeoutMs: number): http.Server {
  const server = http.createServer({ connectionsCheckingInterval: Math.min(30_000, Math.max(250, Math.floor(headersTimeoutMs / 4))) }, handler);
  server.keepAliveTimeout = 65_000;
  server.requestTimeout = 0;
  server.headersTimeout = headersTimeoutMs;
  return server;
}

/**
 * For an HTTP server that is handed its connections (`emit('connection')`, as the one behind the TLS listener is) and
 * so never listens: node:http starts the checks that enforce `headersTimeout` and `requestTimeout`, and the list of
 * connections that `closeIdleConnections()` reads, when the server emits 'listening'. Without them a TLS client that
 * sent its request head a byte at a time kept its connection for as long as it liked (test/edge/slow-head.test.ts
 * fails when this stops working).
 */
export function startConnectionChecks(server: http.Server): http.Server {
  server.emit('listening');
  return server;
}
