/**
 * A connection to a TCP share's port as a pipeline exchange (the steps in steps.ts `connectionSteps`): it has no
 * request, so nothing is answered: a refusal closes it unread (a share policy's with a reset, so the client learns at
 * once that nothing is carried). Once forwarded, its bytes are carried to the share's target (edge/upstream/tcp.ts),
 * metered per connection like HTTP (rx read from the client, tx written to it), and it is closed after the share's
 * idle timeout with no byte either way.
 */
import type { Socket } from 'node:net';
import type { ShareRoute } from '../types.js';
import type { Entry, Refusal } from './exchange.js';
import type { ConnectionParts } from './parts.js';

/** A TCP share's port as the pipeline sees it: edge/tcp/shares.ts keeps one per port it listens on. */
export interface TcpPort {
  /** The share the port was opened for (its policy replaced in place when it changes). */
  readonly route: ShareRoute;
  /** The share's host name: a mutual-TLS port speaks TLS with its certificate. */
  readonly host: string;
  /** Every accepted socket the port's bound counts: in a TLS handshake or carried. */
  readonly sockets: Set<Socket>;
  /** The connections carried to the target. */
  readonly connections: Set<Socket>;
  /** A connection silent both ways this long is closed. */
  idleMs: number;
}

export class TcpExchange implements Entry {
  /** The share its port names; set by the routing step. */
  route: ShareRoute | undefined = undefined;
  /** The client connection: the accepted socket, or the TLS socket over it once a mutual-TLS share's handshake ends. */
  connection: Socket;

  constructor(
    readonly parts: ConnectionParts,
    readonly port: TcpPort,
    socket: Socket,
  ) {
    this.connection = socket;
    socket.on('error', () => undefined);
  }

  gone(): boolean {
    return this.connection.destroyed;
  }

  refuse(r: Refusal): void {
    if (r.reason) this.connection.resetAndDestroy();
    else this.connection.destroy();
  }

  fail(): void {
    this.connection.destroy();
  }

  forward(): void {
    const { port, parts } = this;
    const client = this.connection;
    const route = this.route!;
    port.connections.add(client);
    client.pause();
    // no byte either way for this long (the socket's timer restarts on every read and write): closed, both sides
    client.setTimeout(port.idleMs, () => client.destroy());
    client.once('close', () => port.connections.delete(client));
    parts.meter.track(client, route);
    parts.upstream.carry(client, route);
  }
}
