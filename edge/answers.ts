import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { ANSWERS, type ErrorCode } from '../shared/errors.js';
import { EDGE_CODE_HEADER } from './headers.js';

/** The head fields and body of the edge's own answer on a response, for request inspection (edge/inspect/capture.ts). */
const answers = new WeakMap<ServerResponse, { headers: Record<string, string | number>; body: string }>();
export const edgeAnswer = (res: ServerResponse) => answers.get(res);

/**
 * An answer of the edge itself: JSON {error, message}, with the status and `error` of its code (shared/errors.ts)
 * and the code in the Edgehub-Error-Code header. Never on an answer that comes from a target.
 */
export function answer(res: ServerResponse, code: ErrorCode, message: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const { status, error } = ANSWERS[code];
  const body = JSON.stringify({ error, message });
  const head = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store', [EDGE_CODE_HEADER]: code, ...headers };
  answers.set(res, { headers: head, body });
  res.writeHead(status, head);
  res.end(body);
}

/** Who is told of the edge's own answer on a raw socket (an inspected share's upgrade request, edge/inspect/capture.ts). */
export type SocketAnswerWatcher = (status: number, reason: string, lines: string[], body: string) => void;
const socketWatchers = new WeakMap<Duplex, SocketAnswerWatcher>();
export const watchSocketAnswer = (socket: Duplex, watcher: SocketAnswerWatcher | undefined) => void (watcher ? socketWatchers.set(socket, watcher) : socketWatchers.delete(socket));

/** The same answer written on a raw socket (an upgrade request has no ServerResponse); the connection closes. */
export function answerSocket(socket: Duplex, code: ErrorCode, message: string): void {
  if (socket.destroyed) return;
  const { status, error } = ANSWERS[code];
  const body = JSON.stringify({ error, message });
  const reason = STATUS_CODES[status] ?? 'Error';
  const length = Buffer.byteLength(body);
  socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n${EDGE_CODE_HEADER}: ${code}\r\nconnection: close\r\n\r\n${body}`);
  socketWatchers.get(socket)?.(status, reason, ['content-type', 'application/json', 'content-length', String(length), EDGE_CODE_HEADER, code, 'connection', 'close'], body);
}
