import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { ANSWERS, type ErrorCode } from '../shared/errors.js';
import { EDGE_CODE_HEADER } from './headers.js';

/** The head fields and body of the edge's own answer on a response, for request inspection (edge/inspect/capture.ts). */
const answers = new WeakMap<ServerResponse, { headers: Record<string, string | number>; body: string }>();
export const edgeAnswer = (res: ServerResponse) => answers.get(res);

/** A share's own error pages (its policy's errorPages, by status) for the edge's answers on a response or socket. */
const pages = new WeakMap<object, Partial<Record<number, string>>>();
export const useErrorPages = (on: ServerResponse | Duplex, byStatus: Partial<Record<number, string>>) => void pages.set(on, byStatus);

/**
 * An answer of the edge itself: JSON {error, message}, with the status and `error` of its code (shared/errors.ts)
 * and the code in the Edgehub-Error-Code header. Never on an answer that comes from a target. A 502, 503 or 504 of a
 * share with an error page of that status (useErrorPages) has the page as its body instead, as text/html.
 */
export function answer(res: ServerResponse, code: ErrorCode, message: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const { status, error } = ANSWERS[code];
  const page = pages.get(res)?.[status];
  const body = page ?? JSON.stringify({ error, message });
  const head = {
    'content-type': page === undefined ? 'application/json' : 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    [EDGE_CODE_HEADER]: code,
    ...headers,
  };
  answers.set(res, { headers: head, body });
  res.writeHead(status, head);
  res.end(body);
}

/** Who is told of the edge's own answer on a raw socket (an inspected share's upgrade request, edge/inspect/capture.ts). */
type SocketAnswerWatcher = (status: number, reason: string, lines: string[], body: string) => void;
const socketWatchers = new WeakMap<Duplex, SocketAnswerWatcher>();
export const watchSocketAnswer = (socket: Duplex, watcher: SocketAnswerWatcher | undefined) =>
  void (watcher ? socketWatchers.set(socket, watcher) : socketWatchers.delete(socket));

/** The same answer written on a raw socket (an upgrade request has no ServerResponse); the connection closes. */
export function answerSocket(socket: Duplex, code: ErrorCode, message: string, headers: Record<string, string> = {}): void {
  if (socket.destroyed) return;
  const { status, error } = ANSWERS[code];
  const page = pages.get(socket)?.[status];
  const body = page ?? JSON.stringify({ error, message });
  const type = page === undefined ? 'application/json' : 'text/html; charset=utf-8';
  const reason = STATUS_CODES[status] ?? 'Error';
  const length = Buffer.byteLength(body);
  let more = '';
  for (const name in headers) more += `${name}: ${headers[name]}\r\n`;
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: ${type}\r\ncontent-length: ${length}\r\n${EDGE_CODE_HEADER}: ${code}\r\n${more}connection: close\r\n\r\n${body}`,
  );
  socketWatchers.get(socket)?.(
    status,
    reason,
    ['content-type', type, 'content-length', String(length), EDGE_CODE_HEADER, code, ...Object.entries(headers).flat(), 'connection', 'close'],
    body,
  );
}
