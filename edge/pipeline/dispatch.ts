/**
 * The edge's entry points: each request (HTTP/1.1, or an HTTP/2 stream through edge/front/http2.ts) and each upgrade
 * becomes an exchange that runs the same admission steps (edge/pipeline/steps.ts), ending with the hand-over to the
 * proxy; each connection to a TCP share's port one that runs the connection steps, ending with its bytes carried.
 * startEdge (edge/server.ts) builds the parts and the listeners (edge/tcp/shares.ts the TCP shares' ports).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ConnectionParts, PipelineParts } from './parts.js';
import { RequestExchange } from './requestExchange.js';
import { run } from './run.js';
import { admissionSteps, connectionSteps } from './steps.js';
import { TcpExchange, type TcpPort } from './tcpExchange.js';
import { UpgradeExchange } from './upgradeExchange.js';
import { routingHost } from '../state/routes.js';

/** The request and upgrade handlers of the edge's listeners (`secure`: the TLS listener's). */
export function requestDispatch(parts: PipelineParts) {
  const steps = admissionSteps(parts);
  const { routes } = parts;

  const handle = (secure: boolean) => (req: IncomingMessage, res: ServerResponse) => {
    const host = routingHost(req.headers.host);
    run(new RequestExchange(parts, req, res, secure, host, routes.lookup(host)), steps);
  };

  const upgrade = (secure: boolean) => (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const host = routingHost(req.headers.host);
    run(new UpgradeExchange(parts, req, socket, head, secure, host, routes.lookup(host)), steps);
  };

  return { handle, upgrade };
}

/** The handler of a connection accepted on a TCP share's port. */
export function connectionDispatch(parts: ConnectionParts): (port: TcpPort, socket: Socket) => void {
  const steps = connectionSteps(parts);
  return (port, socket) => run(new TcpExchange(parts, port, socket), steps);
}
