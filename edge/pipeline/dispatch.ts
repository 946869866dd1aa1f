/**
 * The edge's entry points for requests: each request (HTTP/1.1, or an HTTP/2 stream through edge/front/http2.ts) and each
 * upgrade becomes an exchange that runs the same admission steps (edge/pipeline/steps.ts), ending with the hand-over
 * to the proxy. startEdge (edge/server.ts) builds the parts and the listeners.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { PipelineParts } from './parts.js';
import { RequestExchange } from './requestExchange.js';
import { run } from './run.js';
import { admissionSteps } from './steps.js';
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
