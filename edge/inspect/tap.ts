/**
 * What the proxy tells the recording of an inspected exchange as it goes (edge/inspect/capture.ts Tap implements it):
 * the request as forwarded, the answer's head and each chunk of its body. Its own module so that the proxy and the
 * header code name it without importing the recorder, which imports them.
 */
import type { IncomingMessage } from 'node:http';

export interface ExchangeTap {
  /** The request's header lines as sent to the target, and its body (read as the target's connection takes it). */
  forwarded(lines: string[], body: IncomingMessage | null): void;
  /** The answer's status and header lines as the client gets them. */
  head(status: number, lines: string[]): void;
  /** A chunk of the answer's body. */
  data(chunk: Buffer): void;
}
