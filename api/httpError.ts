/**
 * An answer the web layer itself gives, about HTTP and not the domain (a route that does not exist, content
 * negotiation, an authentication challenge, a library's refusal): a code of the catalogue (shared/errors.ts), whose
 * status and `error` value come from the same table as a domain error's, a message and extra headers.
 */
import { ANSWERS, type ErrorCode } from '../shared/errors.js';

export class HttpError extends Error {
  readonly status: number;
  readonly error: string;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
    /** Only for a library's client error whose own status is kept as it is (see api/middleware/errors.ts). */
    status?: number,
  ) {
    super(message);
    this.name = 'HttpError';
    this.status = status ?? ANSWERS[code].status;
    this.error = ANSWERS[code].error;
  }
}
