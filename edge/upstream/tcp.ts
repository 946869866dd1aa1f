/**
 * A TCP share's target side: each admitted connection (edge/pipeline/tcpExchange.ts) is carried to the share's target
 * as bytes, directly under the egress policy or through one of the environment's agents (a CONNECT stream), exactly
 * as HTTP targets are reached (edge/upstream/upstream.ts). Half-close both ways: each side may end its sending while
 * it still reads (allowHalfOpen everywhere; the pump, edgehub-agent/pump, passes an end on as an end).
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { buildConnector } from 'undici';
import { pump } from 'edgehub-agent/pump';
import type { EgressPolicy } from '../../shared/egress.js';
import { logger } from '../../shared/logger.js';
import { egressConnector } from '../egressHttp.js';
import type { ShareRoute } from '../types.js';

interface TcpUpstreamOptions {
  policy: EgressPolicy;
  /** Connecting must take less than this. */
  timeoutMs: number;
  /** The edge's own listening ports, its TCP shares' included: a target on this host at one of them is refused (a loop). */
  ownPorts: () => ReadonlySet<number>;
  /** A connector through the environment's agents, or undefined when the edge connects itself (edge/agents). */
  connectorFor(route: ShareRoute): { key: string; connect: buildConnector.connector } | undefined;
}

export class TcpUpstream {
  private readonly direct: buildConnector.connector;

  constructor(private readonly o: TcpUpstreamOptions) {
    this.direct = egressConnector(o.policy, { timeoutMs: o.timeoutMs, ownPorts: o.ownPorts, allowHalfOpen: true });
  }

  /**
   * Connects to `route`'s target and carries the bytes of `client` (paused) both ways until either side closes: a
   * target not reached closes the client; a client gone closes the target connection.
   */
  carry(client: Socket, route: ShareRoute): void {
    let upstream: Duplex | undefined;
    client.once('close', () => upstream?.destroy());
    const connect = this.o.connectorFor(route)?.connect ?? this.direct;
    connect(
      { hostname: route.target.hostname, host: route.target.host, protocol: 'http:', port: route.target.port, servername: undefined } as buildConnector.Options,
      (err, socket) => {
        if (err || !socket) {
          logger.info({ zId: route.zId, err: err?.message }, 'edge: TCP share target not reached');
          return void client.destroy();
        }
        upstream = socket as unknown as Duplex;
        if (client.destroyed) return void upstream.destroy();
        upstream.on('error', () => client.destroy());
        upstream.once('close', () => {
          // the target went away: what it sent is flushed, then the client's connection closes
          if (!client.writableEnded) client.end();
          client.destroySoon();
        });
        pump(client, upstream);
        pump(upstream, client);
      },
    );
  }
}
