/** An error that maps to an HTTP answer `{error, message}`. Everything else is a 500 without detail. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const badRequest = (message: string) => new ApiError(400, 'invalid_request', message);
export const unauthorized = (message = 'bearer token missing or invalid') => new ApiError(401, 'unauthorized', message);
/**
 * The public API answers "no access" and "no such hub" alike, so that a caller learns nothing of other hubs: 403 with
 * error `not_found` for an invalid token, a token without access to the resource, an unknown hub, and a real
 * certificate enrollment with an expired, spent or other-hub JWT. Only those.
 */
export const notAuthorized = (message = 'hub with the given id not found') => new ApiError(403, 'not_found', message);
/** Every other refusal of an authenticated caller: 403 `forbidden` (a hub key on the operator API, a spent agent JWT). */
export const forbidden = (message: string) => new ApiError(403, 'forbidden', message);
export const notFound = (what: string, id?: string) =>
  new ApiError(404, 'not_found', id === undefined ? `${what} not found` : `${what} with id '${id}' not found`);
export const conflict = (message: string) => new ApiError(409, 'conflict', message);
export const payloadTooLarge = (message = 'request body exceeds 1 MiB') => new ApiError(413, 'payload_too_large', message);
export const unsupportedMediaType = (message = 'request body must be JSON (Content-Type: application/json)') =>
  new ApiError(415, 'unsupported_media_type', message);
/** A tenant quota is used up: 429 saying which limit and how to get under it. */
export const quotaExceeded = (message: string) => new ApiError(429, 'quota_exceeded', message);
export const unavailable = (message: string) => new ApiError(503, 'unavailable', message);

/** A state-machine refusal: 400 that names the current state. */
export const invalidState = (what: string, state: string, action: string) =>
  badRequest(`${what} is ${state}; cannot ${action} from state ${state}`);

/**
 * A job attempt that found what it waits for not there yet (DNS records, a certificate back-off): expected, so the
 * runner logs the first one and keeps the rest at debug level.
 */
export class StillWaiting extends Error {}
