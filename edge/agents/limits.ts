/**
 * What one agent's connection may cost the edge. An agent is a tenant's program, so it may be hostile: it must not
 * hold more than a few connections, make the edge keep unbounded state, or keep the edge's event loop busy with
 * frames that carry nothing, at other tenants' expense.
 *
 * - Connections: at most MAX_CONNECTIONS_PER_AGENT per agent certificate on one edge; the next is refused
 *   (AgentAdmission, which also refuses an agent closed for a flood for FLOOD_PENALTY_MS).
 * - HTTP/2 (node:http2 options on the edge's side of the session): the agent may open no stream of its own, sends
 *   at most a few SETTINGS entries and header pairs, answers within a bounded number of unacknowledged PINGs, and a
 *   session with too many invalid frames (empty DATA frames, among others) or refused streams ends.
 * - Frame floods: edge/agents/floods.ts.
 */
import type { ClientSessionOptions } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import { logger } from '../../shared/logger.js';
import type { AgentRecord } from './directory.js';

const MAX_CONNECTIONS_PER_AGENT = 8;
/** An agent whose connection was closed for a flood is refused this long (a reconnect must not start the next one). */
const FLOOD_PENALTY_MS = 30_000;
/** Streams the edge opens on one agent connection at most (a link with this many is not picked). */
export const MAX_STREAMS_PER_CONNECTION = 1000;
/** Invalid frames (empty DATA frames without END_STREAM, frames nghttp2 rejects) a session takes before it ends. */
export const MAX_INVALID_FRAMES = 100;

/** The edge's side of an agent's HTTP/2 session: the limits node:http2 enforces itself. */
export const SESSION_LIMITS: ClientSessionOptions & { maxSessionInvalidFrames: number; maxSessionRejectedStreams: number } = {
  maxSessionInvalidFrames: MAX_INVALID_FRAMES,
  maxSessionRejectedStreams: 10,
  maxReservedRemoteStreams: 0,
  maxOutstandingPings: 4,
  maxSettings: 16,
  maxHeaderListPairs: 64,
  peerMaxConcurrentStreams: MAX_STREAMS_PER_CONNECTION,
  maxSessionMemory: 32,
};

/** Which agent connections this edge takes: a few per agent certificate, none from an agent serving a flood penalty. */
export class AgentAdmission {
  /** Agents that flooded this edge, with when they may connect again. */
  private readonly penalties = new Map<string, number>();
  /** Open connections per agent (certificate) on this edge. */
  private readonly connections = new Map<string, number>();

  /** Whether `socket` of `agent` is taken (counted until it closes); a refusal is logged and the caller closes it. */
  admit(agent: AgentRecord, socket: TLSSocket): boolean {
    const penalty = this.penalties.get(agent.id);
    if (penalty && penalty > Date.now()) {
      logger.warn(
        { agentId: agent.id, hubId: agent.hubId, remote: socket.remoteAddress },
        `edge: agent connection refused: agent ${agent.id} flooded this edge; it may connect again in ${Math.ceil((penalty - Date.now()) / 1000)} s`,
      );
      return false;
    }
    if (penalty) this.penalties.delete(agent.id);
    const held = (this.connections.get(agent.id) ?? 0) + 1;
    if (held > MAX_CONNECTIONS_PER_AGENT) {
      logger.warn(
        { agentId: agent.id, hubId: agent.hubId, remote: socket.remoteAddress, limit: MAX_CONNECTIONS_PER_AGENT },
        `edge: agent connection refused: agent ${agent.id} already holds ${MAX_CONNECTIONS_PER_AGENT} connections to this edge (the limit per agent certificate)`,
      );
      return false;
    }
    this.connections.set(agent.id, held);
    socket.once('close', () => {
      const left = (this.connections.get(agent.id) ?? 1) - 1;
      if (left > 0) this.connections.set(agent.id, left);
      else this.connections.delete(agent.id);
    });
    return true;
  }

  /** The agent flooded: logs why, and refuses its connections for FLOOD_PENALTY_MS (the caller closes this one). */
  penalize(agent: AgentRecord, socket: TLSSocket, reason: string): void {
    logger.warn(
      { agentId: agent.id, hubId: agent.hubId, remote: socket.remoteAddress },
      `edge: agent connection closed: it sent ${reason}; it may connect again in ${FLOOD_PENALTY_MS / 1000} s`,
    );
    this.penalties.set(agent.id, Date.now() + FLOOD_PENALTY_MS);
  }
}
