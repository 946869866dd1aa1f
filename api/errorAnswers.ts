/**
 * Where the domain's error codes become HTTP answers: the status and the API's `error` value of each code of the
 * catalogue (shared/errors.ts). The `error` values are the API's published ones and do not change.
 */
import type { ErrorCode } from '../shared/errors.js';

export const ANSWERS: Record<ErrorCode, { status: number; error: string }> = {
  EH_INVALID_REQUEST: { status: 400, error: 'invalid_request' },
  EH_INVALID_STATE: { status: 400, error: 'invalid_request' },
  EH_UNAUTHORIZED: { status: 401, error: 'unauthorized' },
  EH_NOT_AUTHORIZED: { status: 403, error: 'not_found' },
  EH_FORBIDDEN: { status: 403, error: 'forbidden' },
  EH_NOT_FOUND: { status: 404, error: 'not_found' },
  EH_CONFLICT: { status: 409, error: 'conflict' },
  EH_PAYLOAD_TOO_LARGE: { status: 413, error: 'payload_too_large' },
  EH_UNSUPPORTED_MEDIA_TYPE: { status: 415, error: 'unsupported_media_type' },
  EH_QUOTA_EXCEEDED: { status: 429, error: 'quota_exceeded' },
  EH_RATE_LIMITED: { status: 429, error: 'too_many_requests' },
  EH_UNAVAILABLE: { status: 503, error: 'unavailable' },
};

/**
 * An answer the web layer itself gives, about HTTP and not the domain (a route that does not exist, content
 * negotiation, an authentication challenge): status, `error`, message and headers as they are.
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}
