/**
 * The edge's messages to an agent besides its CONNECT streams (edgehub-agent/protocol): its environment's targets
 * (with their HTTP checks), answered with what the connection serves and its pool state; and the live edges.
 */
import http2, { type ClientHttp2Session } from 'node:http2';
import { EDGES_PATH, TARGETS_PATH } from 'edgehub-agent/protocol';
import type { FloodWatch } from './floods.js';

/** Largest answer to a list of targets. */
const MAX_ANSWER = 256 << 10;

interface MessageLink {
  session: ClientHttp2Session;
  floods: FloodWatch;
}

/**
 * Sends `targets` (and `checks`, JSON) and resolves once the agent took them, with its answer (JSON text: what it
 * serves, its pool state) or undefined from an older agent (204); rejects when it refused them or did not answer
 * within `timeoutMs`.
 */
export function sendTargets(link: MessageLink, targets: string[], checks: string, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    if (link.session.destroyed || link.session.closed) return reject(new Error('the connection is closed'));
    const stream = link.session.request({ ':method': 'PUT', ':path': TARGETS_PATH, 'content-type': 'application/json' });
    link.floods.track(stream);
    const timer = setTimeout(() => stream.close(http2.constants.NGHTTP2_CANCEL), timeoutMs);
    stream.once('response', (headers) => {
      const status = Number(headers[':status']);
      if (status !== 204 && status !== 200) {
        clearTimeout(timer);
        stream.resume();
        return reject(new Error(`the agent answered ${status} to its targets`));
      }
      let body = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        body += chunk;
        if (body.length > MAX_ANSWER) stream.close(http2.constants.NGHTTP2_CANCEL);
      });
      stream.once('end', () => {
        clearTimeout(timer);
        resolve(status === 200 ? body : undefined);
      });
    });
    stream.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    stream.once('close', () => {
      clearTimeout(timer);
      reject(new Error('the targets were not acknowledged'));
    });
    stream.end(`{"targets":${JSON.stringify(targets)},"checks":${checks}}`);
  });
}

/** Tells the agent the live edges (and which addresses are this edge's own); an agent that does not know it answers 404. */
export function sendEdges(link: MessageLink, edges: { addresses: string[]; self: string[] }): void {
  if (link.session.destroyed || link.session.closed) return;
  let stream: http2.ClientHttp2Stream;
  try {
    stream = link.session.request({ ':method': 'PUT', ':path': EDGES_PATH, 'content-type': 'application/json' });
    link.floods.track(stream);
  } catch {
    return;
  }
  stream.on('error', () => undefined);
  stream.once('response', () => stream.resume());
  stream.end(JSON.stringify({ edges: edges.addresses, self: edges.self }));
}
