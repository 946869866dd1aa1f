/** The edge's listening sockets: listen on a port (0: any free one) and the HTTP/1.1 server's timeouts. */
import type http from 'node:http';
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

/** Keep-alive as nginx's, no limit on a request's duration (uploads and downloads of any size), slow heads cut off. */
export function tune(server: http.Server): http.Server {
  server.keepAliveTimeout = 65_000;
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  return server;
}
