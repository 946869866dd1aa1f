/**
 * One exchange of an inspected share being recorded (edge/inspect/capture.ts queues and writes it): the Tap the proxy
 * tells what crosses (edge/inspect/tap.ts), from routing to the exchange's end, and what it makes of it. Bodies are
 * teed as they pass, each side counting every byte and keeping a copy of the first HUB_INSPECT_BODY_BYTES only (a
 * BodyTap); header lines are recorded as they crossed, credentials replaced; an exchange the edge answered itself is
 * recorded with the head and body of that answer.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { recordedExchange } from '../../shared/inspect/record.js';
import type { CapturedMessage, RecordedExchange, StoredSummary } from '../../shared/inspect/store.js';
import { isForm, redactForm, redactLines, redactQuery } from '../../shared/inspect/redact.js';
import { CALLBACK_PATH } from '../access/login/index.js';
import { clientAddress, EDGE_SET_HEADERS } from '../headers.js';
import { originForm } from '../upstream/paths.js';
import type { ShareRoute } from '../types.js';
import type { ExchangeTap } from './tap.js';

/** Exchanges are ordered by when they reached their edge on this clock: epoch µs from performance.now(). */
const ORIGIN = performance.timeOrigin;

/** Where a finished exchange goes (edge/inspect/capture.ts Capture). */
export interface Recorder {
  readonly limits: { bodyBytes: number };
  /** This edge's name, shown with each exchange. */
  readonly edge: string;
  /** Whether the queue takes one more exchange; when not, the drop is counted. */
  hasRoom(): boolean;
  /** One finished exchange for the writer. */
  enqueue(route: ShareRoute, exchange: RecordedExchange): void;
}

/** Counts every byte of one body and keeps a copy of the first `limit`. */
export class BodyTap {
  total = 0;
  private kept: Buffer[] | undefined;
  private keptBytes = 0;

  constructor(private readonly limit: number) {}

  add(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.keptBytes >= this.limit) return;
    const part = chunk.length <= this.limit - this.keptBytes ? chunk : chunk.subarray(0, this.limit - this.keptBytes);
    (this.kept ??= []).push(Buffer.from(part)); // a copy: the chunk's memory belongs to the socket it came from
    this.keptBytes += part.length;
  }

  get bytes(): number {
    return this.keptBytes;
  }

  /**
   * The message with these (already redacted) header lines; base64 only when a body was kept. A form body
   * (`form`: sent as application/x-www-form-urlencoded) has its listed fields redacted.
   */
  captured(lines: readonly string[], form = false): CapturedMessage {
    const kept = this.kept;
    let bytes = kept === undefined ? undefined : kept.length === 1 ? kept[0] : Buffer.concat(kept);
    if (bytes && form) bytes = redactForm(bytes);
    const body = bytes === undefined ? '' : bytes.toString('base64');
    return { lines, body, bodyTruncated: this.total > this.keptBytes };
  }
}

/** Bytes of a head: the start line and each header line with its CRLF, as they cross the wire. */
const headBytes = (startLine: number, lines: readonly string[]) => {
  let n = startLine + 2 + 2;
  for (let i = 0; i < lines.length; i += 2) n += lines[i].length + lines[i + 1].length + 4;
  return n;
};

/**
 * The request's path as recorded: origin-form, the listed query parameters redacted (shared/inspect/redact.ts); the
 * query of the edge's own login callback (a one-time code) is not kept at all.
 */
function recordedPath(url: string | undefined): string {
  let path: string;
  try {
    path = originForm(url);
  } catch {
    path = url ?? '/';
  }
  return path.startsWith(CALLBACK_PATH) && path.includes('?') ? `${path.slice(0, path.indexOf('?'))}?[redacted]` : redactQuery(path);
}

/**
 * A refused request's header lines as the client sent them, without those only the edge may set towards a target
 * (X-Forwarded-*, verified identities, and any name with `_`, which a live request loses too): a replay of it must not
 * carry an identity the client claimed.
 */
function clientLines(raw: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (name.includes('_') || EDGE_SET_HEADERS.has(name)) continue;
    out.push(raw[i], raw[i + 1]);
  }
  return out;
}

/** Header lines of an answer the edge wrote itself (no target answer went by): those set on it, and those of answer(). */
function writtenLines(res: ServerResponse, own: Record<string, string | number> | undefined): string[] {
  const out: string[] = [];
  for (const headers of [res.getHeaders(), own ?? {}]) {
    for (const name in headers) {
      const value = headers[name];
      if (Array.isArray(value)) for (const v of value) out.push(name, String(v));
      else if (value !== undefined) out.push(name, String(value));
    }
  }
  return out;
}

/** One exchange being recorded, from routing to its end: what the proxy tells it as the answer goes by. */
export class Tap implements ExchangeTap {
  private readonly started = performance.now();
  private readonly at = Date.now();
  private requestBody: BodyTap | undefined;
  private responseBody: BodyTap | undefined;
  /** The head sent to the target; undefined while (or when) the edge did not forward the request. */
  private requestLines: string[] | undefined;
  private status: number | undefined;
  private responseLines: string[] | undefined;
  /** Read now: the request lets go of its socket before the exchange ends. */
  private readonly clientAddress: string;
  /** The edge's own answer, when it answered the request itself (answered()). */
  private own: { headers: Record<string, string | number>; body: string } | undefined;
  private socketAnswered = false;

  constructor(
    private readonly capture: Recorder,
    private readonly route: ShareRoute,
    private readonly req: IncomingMessage,
  ) {
    this.clientAddress = clientAddress(req);
  }

  /** The request goes to the target with these header lines; its body, if any, is seen as the target takes it. */
  forwarded(lines: string[], body: IncomingMessage | null): void {
    this.requestLines = lines;
    if (!body) return;
    const tap = (this.requestBody = new BodyTap(this.capture.limits.bodyBytes));
    // paused until undici resumes it, so nothing flows early
    body.pause();
    body.on('data', (chunk: Buffer) => tap.add(chunk));
  }

  head(status: number, lines: string[]): void {
    this.status = status;
    this.responseLines = lines;
  }

  data(chunk: Buffer): void {
    (this.responseBody ??= new BodyTap(this.capture.limits.bodyBytes)).add(chunk);
  }

  /** The edge's own answer on the response (edge/answers.ts answer): kept for finish(). */
  answered(head: Record<string, string | number>, body: string): void {
    this.own = { headers: head, body };
  }

  /**
   * The edge's refusal of an upgrade request (WebSocket) on its raw socket (edge/answers.ts answerSocket): recorded
   * with the answer it got, once. An upgrade carried through is not recorded.
   */
  answeredSocket(status: number, reason: string, lines: string[], body: string): void {
    if (this.socketAnswered) return;
    this.socketAnswered = true;
    if (!this.capture.hasRoom()) return;
    const responseBody = new BodyTap(this.capture.limits.bodyBytes);
    responseBody.add(Buffer.from(body));
    this.record(status, reason.length, lines, responseBody);
  }

  /** The exchange is over (the answer ended, failed, or the client left): serialized and queued for the writer. */
  finish(res: ServerResponse): void {
    if (!this.capture.hasRoom()) return; // dropped and counted before any work is spent on it
    // the edge's own answers (a refusal, 502, 504 ...) are recorded with the head and body they went out with
    let responseBody = this.responseBody;
    let lines = this.responseLines;
    if (lines === undefined) {
      const own = this.own;
      lines = res.headersSent ? writtenLines(res, own?.headers) : [];
      if (own !== undefined && responseBody === undefined) (responseBody = new BodyTap(this.capture.limits.bodyBytes)).add(Buffer.from(own.body));
    }
    this.record(this.status ?? (res.headersSent ? res.statusCode : 499), res.statusMessage?.length ?? 0, lines, responseBody);
  }

  private record(status: number, reasonLength: number, lines: string[], responseBody: BodyTap | undefined): void {
    const req = this.req;
    const method = req.method ?? 'GET';
    // a forwarded request is recorded as the target received it; a refused one as the client sent it (clientLines)
    const requestLines = this.requestLines ?? clientLines(req.rawHeaders);
    const requestBody = this.requestBody;
    const responseTotal = responseBody?.total ?? 0;
    const summary: StoredSummary = {
      at: this.at,
      u: Math.round((ORIGIN + this.started) * 1000),
      method,
      path: recordedPath(req.url),
      status,
      d: Math.round((performance.now() - this.started) * 1000),
      rxBytes: headBytes(method.length + (req.url?.length ?? 1) + 10, req.rawHeaders) + (requestBody?.total ?? 0),
      txBytes: headBytes(13 + reasonLength, lines) + responseTotal,
      clientAddress: this.clientAddress,
      edge: this.capture.edge,
    };
    const empty = { body: '', bodyTruncated: false };
    this.capture.enqueue(
      this.route,
      recordedExchange(
        summary,
        requestBody ? requestBody.captured(redactLines(requestLines), isForm(requestLines)) : { lines: redactLines(requestLines), ...empty },
        responseBody ? responseBody.captured(redactLines(lines)) : { lines: redactLines(lines), ...empty },
      ),
    );
  }
}
