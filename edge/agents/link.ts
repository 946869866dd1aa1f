/**
 * One agent connection as the gateway (edge/agents/gateway.ts) keeps it: the HTTP/2 session the edge speaks as the
 * client over the TLS connection the agent opened, what the agent acknowledged, and the flood watch on it.
 */
import http2, { type ClientHttp2Session } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import type { buildConnector } from 'undici';
import { logger } from '../../shared/logger.js';
import type { AgentRecord } from './directory.js';
import { type FloodWatch, watchFloods } from './floods.js';
import { SESSION_LIMITS } from './limits.js';
import { type PoolMember, poolDefaults } from './pool.js';

/** Per-stream receive window: bounds what one stream buffers when its reader is slow (back-pressure). */
const STREAM_WINDOW = 1 << 20;
/** The connection's receive window, shared by its streams. */
const SESSION_WINDOW = 32 << 20;
/** Largest DATA frame this side takes: fewer frames per MiB (HTTP/2's default is 16 KiB). */
const MAX_FRAME = 256 << 10;

let linkIds = 0;

export interface Link extends PoolMember {
  /** This connection, among the edge's (the key of its pools). */
  id: number;
  agent: AgentRecord;
  session: ClientHttp2Session;
  /** The edge address the agent dialed (host:port as this edge sees it). */
  address: string;
  streams: number;
  /** Counts what the edge's streams on it receive (the flood watch tells traffic from overhead). */
  floods: FloodWatch;
  /** Targets the agent has acknowledged. */
  acked: Set<string>;
  /** The HTTP checks it acknowledged with them (JSON). */
  ackedChecks: string;
  /** The list being sent, while a PUT is in flight. */
  pushing: Promise<void> | undefined;
  ready: boolean;
  pingOutstanding: boolean;
  /** The agent sent GOAWAY: it takes no new stream. */
  closing: boolean;
  socket: TLSSocket;
  /** Its socket's byte counts when the figures were last scraped (edge/agents/figures.ts). */
  seen: { read: number; written: number };
  connector?: buildConnector.connector;
}

/**
 * The session over an admitted agent's socket, as a link that carries nothing yet (ready once it took its targets).
 * `abused`: the flood watch gave up on it (its session and socket are destroyed then); `closed`: the session closed.
 */
export function openLink(agent: AgentRecord, socket: TLSSocket, abused: (reason: string) => void, closed: (link: Link) => void): Link {
  socket.setKeepAlive(true, 15_000);
  socket.setNoDelay(true);
  const session = http2.connect('http://edgehub-agent', {
    createConnection: () => socket,
    // the agent opens no stream of its own: it only answers the edge's
    settings: { initialWindowSize: STREAM_WINDOW, maxFrameSize: MAX_FRAME, enablePush: false, maxConcurrentStreams: 0 },
    ...SESSION_LIMITS,
  });
  const floods = watchFloods(session, socket, (reason) => {
    abused(reason);
    session.destroy();
    socket.destroy();
  });
  const link: Link = {
    ...poolDefaults(),
    id: ++linkIds,
    agent,
    session,
    address: `${socket.localAddress?.replace(/^::ffff:/, '')}:${socket.localPort}`,
    streams: 0,
    floods,
    acked: new Set(),
    ackedChecks: '{}',
    pushing: undefined,
    ready: false,
    pingOutstanding: false,
    closing: false,
    socket,
    seen: { read: 0, written: 0 },
  };
  session.once('goaway', () => (link.closing = true));
  session.on('error', (err) => logger.info({ agentId: agent.id, err: err.message }, 'edge: agent connection failed'));
  session.once('connect', () => session.setLocalWindowSize(SESSION_WINDOW));
  session.once('close', () => {
    floods.stop();
    closed(link);
  });
  return link;
}
