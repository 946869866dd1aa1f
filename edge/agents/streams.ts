/**
 * CONNECT streams through an agent's connection (edge/agents/gateway.ts chooses the connection): one stream per
 * connection to a target, answered 200 once the agent has connected to it, and the undici connector that hands such
 * a stream to the upstream pools as their connection (TLS end to end inside it for an https target).
 */
import http2, { type ClientHttp2Session } from 'node:http2';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { buildConnector } from 'undici';
import { authorityOf, ERROR_HEADER } from 'edgehub-agent/protocol';
import { DomainError, refusal } from '../../shared/errors.js';
import { targetTimedOut } from '../upstream/failures.js';
import type { FloodWatch } from './floods.js';

/**
 * A stream that reached no target (the agent never answered it, or could not connect to the target): it may be
 * opened through another agent; when none is left, it is the exchange's answer as it is.
 */
export class Unanswered extends DomainError {
  constructor(
    message: string,
    /** 'unreachable': the agent answered that it could not connect to the target; else it never answered. */
    readonly kind: 'unanswered' | 'unreachable' = 'unanswered',
  ) {
    super('EH_AGENT_TARGET_UNREACHABLE', message);
  }
}

/** What a stream needs of an agent connection. */
interface StreamLink {
  session: ClientHttp2Session;
  agent: { envZId: string };
  /** Its open streams (counted here). */
  streams: number;
  floods: FloodWatch;
}

/**
 * A CONNECT stream through `link`; an Unanswered error when it reached no target (safe to try elsewhere). `host` names
 * the target in the answer to a timeout (as the share's target URL names it; the authority when there is no URL).
 */
export function connectStream(link: StreamLink, authority: string, timeoutMs: number, host = authority): Promise<Duplex> {
  const { envZId } = link.agent;
  return new Promise((resolve, reject) => {
    let stream: http2.ClientHttp2Stream;
    try {
      stream = link.session.request({ ':method': 'CONNECT', ':authority': authority }, { endStream: false });
    } catch (err) {
      return reject(new Unanswered(`the agent of environment ${envZId} went away (${(err as Error).message})`));
    }
    link.streams++;
    link.floods.track(stream);
    let answered = false;
    stream.once('close', () => {
      link.streams--;
      if (!answered) {
        clearTimeout(timer);
        reject(new Unanswered(`the agent of environment ${envZId} closed the stream to ${authority} unanswered`));
      }
    });
    const timer = setTimeout(() => {
      answered = true;
      stream.close(http2.constants.NGHTTP2_CANCEL);
      // the agent did not connect to the target in time
      reject(targetTimedOut(host));
    }, timeoutMs);
    stream.once('response', (headers) => {
      answered = true;
      clearTimeout(timer);
      const status = Number(headers[':status']);
      if (status === 200) return resolve(stream);
      const reason = String(headers[ERROR_HEADER] ?? `the agent answered ${status}`);
      stream.close(http2.constants.NGHTTP2_CANCEL);
      // 502: the agent could not connect to the target (nothing reached it): another agent may
      reject(status === 403 ? refusal('EH_AGENT_REFUSED_TARGET', reason) : new Unanswered(reason, 'unreachable'));
    });
    stream.once('error', (err) => {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      reject(new Unanswered(`the agent's stream to ${authority} failed (${err.message})`));
    });
  });
}

/**
 * An undici connector whose connections are streams `open` makes (TLS inside them for an https target); `open` gets
 * the target's authority (host:port) and its host as its URL names it (for the answer to a timeout).
 */
export function streamConnector(open: (authority: string, host: string) => Promise<Duplex>, timeoutMs: number): buildConnector.connector {
  return (opts, callback) => {
    const https = opts.protocol === 'https:';
    const authority = authorityOf(opts.hostname, Number(opts.port) || (https ? 443 : 80));
    open(authority, opts.host ?? authority).then(
      (stream) => {
        if (!https) return callback(null, stream as never);
        // an https target: TLS end to end from the edge, through the agent's stream
        const servername = opts.servername ?? (/^[\d.]+$|:/.test(opts.hostname) ? undefined : opts.hostname);
        const secure = tls.connect({ socket: stream, servername, ALPNProtocols: ['http/1.1'] });
        // TLS with the target through the agent did not finish in time
        const timer = setTimeout(() => secure.destroy(targetTimedOut(opts.host ?? authority)), timeoutMs);
        secure.once('secureConnect', () => {
          clearTimeout(timer);
          callback(null, secure as never);
        });
        secure.once('error', (err) => {
          clearTimeout(timer);
          callback(err, null);
        });
      },
      (err) => callback(err as Error, null),
    );
  };
}
