import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { ANSWERS, type ErrorCode } from '../shared/errors.js';
import { EDGE_CODE_HEADER } from './headers.js';
import type { ExchangeTap } from './inspect/tap.js';

/** A share's own error pages (its policy's errorPages, by status): the body of the edge's 502, 503 and 504. */
type ErrorPages = Partial<Record<number, string>>;

/** The status, body and content type of the edge's answer `code`: JSON {error, message}, or the share's page. */
function answerBody(code: ErrorCode, message: string, pages: ErrorPages | undefined): { status: number; body: string; type: string } {
  const { status, error } = ANSWERS[code];
  const page = pages?.[status];
  return page === undefined
    ? { status, body: JSON.stringify({ error, message }), type: 'application/json' }
    : { status, body: page, type: 'text/html; charset=utf-8' };
}

/**
 * An answer of the edge itself: JSON {error, message}, with the status and `error` of its code (shared/errors.ts)
 * and the code in the Edgehub-Error-Code header. Never on an answer that comes from a target. A 502, 503 or 504 of a
 * share with an error page of that status (`pages`, its policy's) has the page as its body instead, as text/html. An
 * inspected exchange's `tap` is told the head and body that went out (edge/inspect/recording.ts records them).
 */
export function answer(
  res: ServerResponse,
  code: ErrorCode,
  message: string,
  headers: Record<string, string> = {},
  tap?: ExchangeTap,
  pages?: ErrorPages,
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const { status, body, type } = answerBody(code, message, pages);
  const head = {
    'content-type': type,
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    [EDGE_CODE_HEADER]: code,
    ...headers,
  };
  tap?.answered(head, body);
  res.writeHead(status, head);
  res.end(body);
}

/**
 * The same answer written on a raw socket (an upgrade request has no ServerResponse); the connection closes. An
 * inspected exchange's `tap` is told the answer as it went out; `pages` as for answer().
 */
export function answerSocket(
  socket: Duplex,
  code: ErrorCode,
  message: string,
  headers: Record<string, string> = {},
  tap?: ExchangeTap,
  pages?: ErrorPages,
): void {
  if (socket.destroyed) return;
  const { status, body, type } = answerBody(code, message, pages);
  const reason = STATUS_CODES[status] ?? 'Error';
  const length = Buffer.byteLength(body);
  let more = '';
  for (const name in headers) more += `${name}: ${headers[name]}\r\n`;
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: ${type}\r\ncontent-length: ${length}\r\n${EDGE_CODE_HEADER}: ${code}\r\n${more}connection: close\r\n\r\n${body}`,
  );
  tap?.answeredSocket(
    status,
    reason,
    ['content-type', type, 'content-length', String(length), EDGE_CODE_HEADER, code, ...Object.entries(headers).flat(), 'connection', 'close'],
    body,
  );
}
