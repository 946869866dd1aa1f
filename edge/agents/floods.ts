/**
 * Frame floods on an agent's HTTP/2 session, seen from the edge's side (node:http2 does the framing; nothing here
 * parses frames). A flood is frames that make the edge work and carry nothing: node:http2 answers PING and SETTINGS
 * by itself and reports WINDOW_UPDATE, PRIORITY, RST_STREAM on closed streams, empty DATA frames on closed streams and
 * unknown frame types by no event at all. So the watch counts:
 *
 * - PING and SETTINGS frames, from the session's events: over MAX_CONTROL_FRAMES_PER_SECOND in a second (a fixed
 *   window of rate-limiter-flexible) is a flood;
 * - everything else as bytes: what the session read from the agent (the TLS socket's plaintext `bytesRead`) less
 *   what honest traffic explains, which is the DATA payload the edge's streams received (counted as each chunk
 *   arrives, read or not), a frame header per chunk, a header-block allowance per stream the edge opened (the
 *   agent's response HEADERS, its END_STREAM or RST_STREAM, the flow-control updates of a small exchange), and the
 *   agent's acknowledgements of what the edge wrote (WINDOW_UPDATEs, PING and SETTINGS acks: a 256th of it). What is
 *   left is overhead; a leaky bucket lets OVERHEAD_PER_SECOND of it through (an honest agent's pings and settings
 *   are a few hundred bytes a second), banks at most OVERHEAD_BURST of unused allowance, and a session past it is
 *   a flood. (This one is counted here, not by rate-limiter-flexible: what honest traffic explains earns allowance
 *   back, and a limiter that only counts what is spent has no place for that.) This holds whether streams are open or not: a flood beside a slow answer in progress is caught too;
 * - nghttp2's own verdicts: more than MAX_INVALID_FRAMES invalid frames (empty DATA frames on an open stream among
 *   them) or an endless header block (too many CONTINUATION frames) end the session in node:http2 with an error,
 *   which is reported as a flood here.
 *
 * Checked every CHECK_MS, so a flood runs at most about that long before `abuse` is called (once).
 */
import type { ClientHttp2Session, ClientHttp2Stream } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { MAX_INVALID_FRAMES } from './limits.js';

/** PINGs or SETTINGS frames per second an agent may send (an honest one sends almost none). */
const MAX_CONTROL_FRAMES_PER_SECOND = 50;
/** Unexplained bytes per second an agent may send (its acknowledgements and pings come to a few hundred). */
export const OVERHEAD_PER_SECOND = 256 * 1024;
/** Unused allowance banked at most (a stream's allowance may come a window before its header block). */
const OVERHEAD_BURST = 64 * 1024;
/** Allowance per stream the edge opened: its response header block, END_STREAM or RST_STREAM, window updates. */
const STREAM_ALLOWANCE = 1024;
/** Bytes of an HTTP/2 frame header, allowed for each chunk of DATA received. */
const FRAME_HEADER = 9;
/** The agent's acknowledgements of what the edge wrote, allowed as a share of it. */
const ACK_SHARE = 1 / 256;
/** How often the counts are checked: a flood runs at most about this long. */
export const CHECK_MS = 100;

/** PINGs and SETTINGS frames, counted per session in fixed windows of a second (rate-limiter-flexible). */
const controlFrames = {
  ping: new RateLimiterMemory({ keyPrefix: 'ping', points: MAX_CONTROL_FRAMES_PER_SECOND, duration: 1 }),
  settings: new RateLimiterMemory({ keyPrefix: 'settings', points: MAX_CONTROL_FRAMES_PER_SECOND, duration: 1 }),
};
let sessions = 0;

export interface FloodWatch {
  /** Counts a stream the edge opened on the session: its allowance and the DATA it receives. */
  track(stream: ClientHttp2Stream): void;
  /** Stops watching (the session closed). */
  stop(): void;
  /**
   * The most bytes seen in one check beyond DATA payload and frame headers, before any allowance (how close the
   * agent's control traffic came to the budget by itself).
   */
  peak(): number;
}

/**
 * node:http2 errors that are nghttp2's verdict on the agent's frames, and what they mean. A protocol error is frames
 * HTTP/2 forbids, or, with the nghttp2 of newer Node versions (1.69 in Node 22), more frames that change nothing
 * (PRIORITY, unknown types) than its own limit allows: nghttp2 ends such a session before the overhead budget here
 * does, and the error does not say which of the two it was.
 */
function verdict(err: Error & { code?: string }): string | undefined {
  if (err.code === 'ERR_HTTP2_TOO_MANY_INVALID_FRAMES') return `over ${MAX_INVALID_FRAMES} invalid frames (such as empty DATA frames on an open stream)`;
  if (err.code !== 'ERR_HTTP2_ERROR') return undefined;
  if (/CONTINUATION/i.test(err.message)) return `an endless header block (${err.message})`;
  return `frames nghttp2 refused (${err.message}: frames HTTP/2 forbids, or more frames that change nothing than it allows)`;
}

/** Watches `session` (over `socket`) for floods; calls `abuse(reason)` once when one is seen (the caller closes it). */
export function watchFloods(session: ClientHttp2Session, socket: TLSSocket, abuse: (reason: string) => void): FloodWatch {
  const key = String(++sessions);
  // explained so far, counted as it arrives
  let payload = 0;
  let chunks = 0;
  let streams = 0;
  let last = { read: socket.bytesRead, written: socket.bytesWritten, payload, chunks, streams };
  /** Unexplained bytes beyond the budget; negative: allowance banked. */
  let level = 0;
  let peak = 0;
  let done = false;
  const report = (reason: string) => {
    if (done) return;
    done = true;
    abuse(reason);
  };
  // the verdict comes a microtask later: node:http2 runs microtasks between the frames of one read
  const onPing = () => void controlFrames.ping.consume(key).catch(() => report(`a PING flood (over ${MAX_CONTROL_FRAMES_PER_SECOND} in a second)`));
  const onSettings = () => void controlFrames.settings.consume(key).catch(() => report(`a SETTINGS flood (over ${MAX_CONTROL_FRAMES_PER_SECOND} in a second)`));
  const onError = (err: Error) => {
    const why = verdict(err);
    if (why) report(why);
  };
  session.on('ping', onPing);
  session.on('remoteSettings', onSettings);
  session.on('error', onError);
  const check = () => {
    const now = { read: socket.bytesRead, written: socket.bytesWritten, payload, chunks, streams };
    const read = now.read - last.read;
    const data = now.payload - last.payload + FRAME_HEADER * (now.chunks - last.chunks);
    const explained = data + STREAM_ALLOWANCE * (now.streams - last.streams) + ACK_SHARE * (now.written - last.written);
    last = now;
    peak = Math.max(peak, read - data);
    level = Math.max(-OVERHEAD_BURST, level + read - explained - (OVERHEAD_PER_SECOND * CHECK_MS) / 1000);
    if (level > 0) {
      report(
        `${Math.round(read - explained)} bytes of frames in ${CHECK_MS} ms that its streams' data does not explain (a WINDOW_UPDATE, PRIORITY, RST_STREAM, empty DATA or unknown-frame flood; the budget is ${OVERHEAD_PER_SECOND / 1024} KiB a second)`,
      );
    }
  };
  const timer = setInterval(check, CHECK_MS);
  timer.unref();
  return {
    track(stream) {
      streams++;
      // every chunk a Readable receives is handed to its push(), whether anyone reads it yet or not: counting there
      // counts DATA as it arrives, without putting the stream into flowing mode (its reader keeps back-pressure)
      const push = stream.push;
      stream.push = function (this: ClientHttp2Stream, chunk: unknown, encoding?: BufferEncoding) {
        if (chunk && (chunk as Buffer).length) {
          payload += (chunk as Buffer).length;
          chunks++;
        }
        return push.call(this, chunk, encoding);
      };
    },
    peak: () => Math.round(peak),
    stop() {
      done = true;
      clearInterval(timer);
      session.off('ping', onPing);
      session.off('remoteSettings', onSettings);
      session.off('error', onError);
    },
  };
}
