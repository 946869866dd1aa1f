/**
 * What the edge tells the recording of an inspected exchange as it goes (edge/inspect/recording.ts Tap implements it):
 * the request as forwarded, the answer's head and each chunk of its body, or the edge's own answer (edge/answers.ts,
 * to which the exchange hands its tap). Its own module so that the proxy, the answers and the header code name it
 * without importing the recorder, which imports them.
 */
import type { IncomingMessage } from 'node:http';

export interface ExchangeTap {
  /** The request's header lines as sent to the target, and its body (read as the target's connection takes it). */
  forwarded(lines: string[], body: IncomingMessage | null): void;
  /** The answer's status and header lines as the client gets them. */
  head(status: number, lines: string[]): void;
  /** A chunk of the answer's body. */
  data(chunk: Buffer): void;
  /** The edge answered the request itself (answer()): the head fields and the body it wrote. */
  answered(head: Record<string, string | number>, body: string): void;
  /** The edge answered an upgrade request itself on its raw socket (answerSocket()): as it went out. */
  answeredSocket(status: number, reason: string, lines: string[], body: string): void;
}
