/**
 * A moving address: a TCP listener on loopback that relays each connection to a target port, and can be pointed at
 * another target, closing the connections it holds (as a failover proxy or a DNS flip does). node-postgres takes one
 * host per connection string, so a PostgreSQL failover reaches the service through an address like this one (HAProxy,
 * a managed service's endpoint) on real machines.
 */
import net from 'node:net';

export interface Relay {
  port: number;
  /** The port connections go to now; undefined while it refuses them. */
  readonly target: number | undefined;
  /** Points the relay at `port` (undefined: new connections are refused); every open connection is closed. */
  switchTo(port: number | undefined): void;
  close(): Promise<void>;
}

export async function startRelay(target: number | undefined, host = '127.0.0.1'): Promise<Relay> {
  let current = target;
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (current === undefined) return client.destroy();
    const upstream = net.connect(current, host);
    open.add(client);
    open.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    get target() {
      return current;
    },
    switchTo(port) {
      current = port;
      for (const socket of open) socket.destroy();
      open.clear();
    },
    close() {
      for (const socket of open) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
