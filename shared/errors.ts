/**
 * The error catalogue. Every refusal the domain raises is a DomainError with a stable code from ERROR_CODES and a
 * sentence for people; commands and the workers raise them without knowing HTTP. The API turns each code into its
 * answer in one place (api/errorAnswers.ts): the status and the `error` value. Anything that is not a DomainError
 * is a fault, answered 500 without detail. Like Fastify's lib/errors.js and undici's lib/core/errors.js, codes never
 * change meaning once published; a new kind of refusal gets a new code.
 */
export const ERROR_CODES = {
  EH_INVALID_REQUEST: 'a value is malformed, of the wrong type, unknown, or refused by a rule of the resource',
  EH_INVALID_STATE: "the resource's state does not allow the operation (the message names the state)",
  EH_UNAUTHORIZED: 'no credential, or one that is invalid or expired',
  EH_NOT_AUTHORIZED: 'the credential gives no access to this hub or resource (told apart from "no such hub" by nothing)',
  EH_FORBIDDEN: 'the credential is valid, but this operation is refused to it',
  EH_NOT_FOUND: 'no such resource in a hub the caller may see',
  EH_CONFLICT: 'a name or value that must be unique is taken, or a concurrent change won',
  EH_PAYLOAD_TOO_LARGE: 'the request body is larger than allowed',
  EH_UNSUPPORTED_MEDIA_TYPE: 'the request body is not JSON',
  EH_QUOTA_EXCEEDED: "a tenant quota is used up (the message names it and how to get under it)",
  EH_RATE_LIMITED: 'too many requests or failed authentications from one address; retry after the given time',
  EH_UNAVAILABLE: 'a dependency (PostgreSQL, Redis, a worker) did not answer in time; retry later',
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** For EH_RATE_LIMITED and EH_UNAVAILABLE: when trying again makes sense. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const isDomainError = (err: unknown, code?: ErrorCode): err is DomainError => err instanceof DomainError && (code === undefined || err.code === code);

export const badRequest = (message: string) => new DomainError('EH_INVALID_REQUEST', message);
export const unauthorized = (message = 'bearer token missing or invalid') => new DomainError('EH_UNAUTHORIZED', message);
/**
 * The public API answers "no access" and "no such hub" alike, so that a caller learns nothing of other hubs: 403 with
 * error `not_found` for an invalid token, a token without access to the resource, an unknown hub, and a real
 * certificate enrollment with an expired, spent or other-hub JWT. Only those.
 */
export const notAuthorized = (message = 'hub with the given id not found') => new DomainError('EH_NOT_AUTHORIZED', message);
/** Every other refusal of an authenticated caller: 403 `forbidden` (a hub key on the operator API, a spent agent JWT). */
export const forbidden = (message: string) => new DomainError('EH_FORBIDDEN', message);
export const notFound = (what: string, id?: string) =>
  new DomainError('EH_NOT_FOUND', id === undefined ? `${what} not found` : `${what} with id '${id}' not found`);
export const conflict = (message: string) => new DomainError('EH_CONFLICT', message);
export const payloadTooLarge = (message = 'request body exceeds 1 MiB') => new DomainError('EH_PAYLOAD_TOO_LARGE', message);
export const unsupportedMediaType = (message = 'request body must be JSON (Content-Type: application/json)') =>
  new DomainError('EH_UNSUPPORTED_MEDIA_TYPE', message);
/** A tenant quota is used up: say which limit and how to get under it. */
export const quotaExceeded = (message: string) => new DomainError('EH_QUOTA_EXCEEDED', message);
export const rateLimited = (message: string, retryAfterSeconds: number) => new DomainError('EH_RATE_LIMITED', message, retryAfterSeconds);
export const unavailable = (message: string, retryAfterSeconds?: number) => new DomainError('EH_UNAVAILABLE', message, retryAfterSeconds);

/** A state-machine refusal that names the current state. */
export const invalidState = (what: string, state: string, action: string) =>
  new DomainError('EH_INVALID_STATE', `${what} is ${state}; cannot ${action} from state ${state}`);

/**
 * A job attempt that found what it waits for not there yet (DNS records, a certificate back-off): expected, so the
 * runner logs the first one and keeps the rest at debug level.
 */
export class StillWaiting extends Error {}
