/**
 * What one agent's connection may cost the edge. An agent is a tenant's program, so it may be hostile: it must not
 * hold more than a few connections, make the edge keep unbounded state, or keep the edge's event loop busy with
 * frames that carry nothing, at other tenants' expense.
 *
 * - Connections: at most MAX_CONNECTIONS_PER_AGENT per agent certificate on one edge; the next is refused.
 * - HTTP/2 (node:http2 options on the edge's side of the session): the agent may open no stream of its own, sends
 *   at most a few SETTINGS entries and header pairs, answers within a bounded number of unacknowledged PINGs, and a
 *   session with too many invalid frames or refused streams ends.
 * - Floods of frames that node:http2 answers by itself (PING, SETTINGS: each asks for an acknowledgement) are
 *   counted per second from the session's events; frames it offers no event for (WINDOW_UPDATE, RST_STREAM,
 *   PRIORITY, ...) show as bytes read while no stream is open, when an honest agent sends next to nothing. Over a
 *   limit the session is closed with a log line naming the agent and what it sent.
 */
import type { ClientHttp2Session, ClientSessionOptions } from 'node:http2';
import type { TLSSocket } from 'node:tls';

export const MAX_CONNECTIONS_PER_AGENT = 8;
/** An agent whose connection was closed for a flood is refused this long (a reconnect must not start the next one). */
export const FLOOD_PENALTY_MS = 30_000;
/** Streams the edge opens on one agent connection at most (a link with this many is not picked). */
export const MAX_STREAMS_PER_CONNECTION = 1000;
/** PINGs or SETTINGS frames per second an agent may send (an honest one sends almost none). */
const MAX_CONTROL_FRAMES_PER_SECOND = 50;
/** Bytes an agent may send in one second while no stream is open (its acknowledgements and pings: a few hundred). */
const MAX_IDLE_BYTES_PER_SECOND = 256 * 1024;
/** How often the counts are checked: a flood runs at most about this long. */
const CHECK_MS = 100;

/** The edge's side of an agent's HTTP/2 session: the limits node:http2 enforces itself. */
export const SESSION_LIMITS: ClientSessionOptions & { maxSessionInvalidFrames: number; maxSessionRejectedStreams: number } = {
  maxSessionInvalidFrames: 100,
  maxSessionRejectedStreams: 10,
  maxReservedRemoteStreams: 0,
  maxOutstandingPings: 4,
  maxSettings: 16,
  maxHeaderListPairs: 64,
  peerMaxConcurrentStreams: MAX_STREAMS_PER_CONNECTION,
  maxSessionMemory: 32,
};

/**
 * Watches a session for floods; calls `abuse(reason)` once when one is seen (the caller closes the session).
 * `streams` tells how many streams the edge has open on it now and how many it ever opened (a window in which one
 * opened and closed is not idle: its answer was read in it). Returns the function that stops watching.
 */
export function watchFloods(session: ClientHttp2Session, socket: TLSSocket, streams: () => { open: number; opened: number }, abuse: (reason: string) => void): () => void {
  let pings = 0;
  let settings = 0;
  let bytes = socket.bytesRead;
  let last = streams();
  let done = false;
  const report = (reason: string) => {
    if (done) return;
    done = true;
    abuse(reason);
  };
  const onPing = () => {
    if (++pings > MAX_CONTROL_FRAMES_PER_SECOND) report(`a PING flood (over ${MAX_CONTROL_FRAMES_PER_SECOND} in a second)`);
  };
  const onSettings = () => {
    if (++settings > MAX_CONTROL_FRAMES_PER_SECOND) report(`a SETTINGS flood (over ${MAX_CONTROL_FRAMES_PER_SECOND} in a second)`);
  };
  session.on('ping', onPing);
  session.on('remoteSettings', onSettings);
  const timer = setInterval(() => {
    const read = socket.bytesRead - bytes;
    bytes = socket.bytesRead;
    const now = streams();
    const idle = last.open === 0 && now.open === 0 && now.opened === last.opened;
    last = now;
    if (idle && read > (MAX_IDLE_BYTES_PER_SECOND * CHECK_MS) / 1000) {
      report(`${read} bytes of frames in ${CHECK_MS} ms with no stream open (a WINDOW_UPDATE, RST_STREAM or similar flood)`);
    }
    pings = Math.max(0, pings - (MAX_CONTROL_FRAMES_PER_SECOND * CHECK_MS) / 1000);
    settings = Math.max(0, settings - (MAX_CONTROL_FRAMES_PER_SECOND * CHECK_MS) / 1000);
  }, CHECK_MS);
  timer.unref();
  return () => {
    done = true;
    clearInterval(timer);
    session.off('ping', onPing);
    session.off('remoteSettings', onSettings);
  };
}
