/**
 * Where the catalogue's codes (shared/errors.ts) become HTTP answers: the status and the `error` value of the body of
 * each code, for the API and for the edge's own answers alike (the one table; the API's middleware and the edge's
 * answer() read it). The `error` values are the published ones and do not change; a code answers the same wherever
 * it is raised. The code itself goes out in the `Edgehub-Error-Code` header of every error answer.
 */
import type { ErrorCode } from './errors.js';

/** The response header that carries the code of an error answer. */
export const ERROR_CODE_HEADER = 'Edgehub-Error-Code';

export interface ErrorAnswer {
  status: number;
  error: string;
}

const invalid = { status: 400, error: 'invalid_request' } as const;
const notAuthorized = { status: 403, error: 'not_found' } as const;
const forbidden = { status: 403, error: 'forbidden' } as const;
const conflict = { status: 409, error: 'conflict' } as const;
const unavailable = { status: 503, error: 'unavailable' } as const;
const edgeBadRequest = { status: 400, error: 'bad_request' } as const;
const badGateway = { status: 502, error: 'bad_gateway' } as const;

export const ANSWERS: Record<ErrorCode, ErrorAnswer> = {
  EH_INVALID_REQUEST: invalid,
  EH_INVALID_STATE: invalid,
  EH_UNAUTHORIZED: { status: 401, error: 'unauthorized' },
  EH_NOT_AUTHORIZED: notAuthorized,
  EH_FORBIDDEN: forbidden,
  EH_NOT_FOUND: { status: 404, error: 'not_found' },
  EH_CONFLICT: conflict,
  EH_PAYLOAD_TOO_LARGE: { status: 413, error: 'payload_too_large' },
  EH_UNSUPPORTED_MEDIA_TYPE: { status: 415, error: 'unsupported_media_type' },
  EH_QUOTA_EXCEEDED: { status: 429, error: 'quota_exceeded' },
  EH_RATE_LIMITED: { status: 429, error: 'too_many_requests' },
  EH_UNAVAILABLE: unavailable,

  EH_ROUTE_NOT_FOUND: { status: 404, error: 'not_found' },
  EH_NOT_ACCEPTABLE: { status: 406, error: 'not_acceptable' },
  EH_MALFORMED_JSON: invalid,
  EH_INTERNAL_ERROR: { status: 500, error: 'internal_error' },

  EH_AUTHORIZATION_MALFORMED: { status: 401, error: 'unauthorized' },
  EH_ADMIN_REQUIRED: forbidden,
  EH_HUB_KEY_REQUIRED: notAuthorized,
  EH_FEATURE_DISABLED: notAuthorized,
  EH_ORIGIN_REFUSED: forbidden,

  EH_JWT_INVALID: notAuthorized,
  EH_JWT_UNKNOWN_KEY: notAuthorized,
  EH_JWT_EXPIRED: notAuthorized,
  EH_JWT_SPENT: notAuthorized,
  EH_JWT_REVOKED: notAuthorized,
  EH_JWT_WRONG_HUB: notAuthorized,
  EH_TOKEN_UNUSABLE: notAuthorized,
  EH_TOKEN_EXPIRED: { status: 401, error: 'unauthorized' },
  EH_TOKEN_SPENT: notAuthorized,
  EH_TOKEN_TTL_TOO_LONG: invalid,
  EH_CSR_INVALID: invalid,
  EH_CSR_SUBJECT_MISMATCH: invalid,
  EH_CERTIFICATE_INVALID: invalid,
  EH_NAME_TAKEN: conflict,
  EH_AGENT_JWT_INVALID: forbidden,
  EH_AGENT_JWT_EXPIRED: forbidden,
  EH_AGENT_JWT_SPENT: forbidden,
  EH_AGENT_PROOF_INVALID: forbidden,
  EH_AGENT_CERT_EXPIRED: forbidden,

  EH_IN_USE: invalid,
  EH_ENVIRONMENT_NOT_EMPTY: conflict,
  EH_DEFAULT_ENVIRONMENT: invalid,
  EH_TUNNEL_EXISTS: conflict,
  EH_ADDRESS_IN_USE: conflict,
  EH_PORT_IN_USE: conflict,
  EH_TCP_PORTS_EXHAUSTED: conflict,
  EH_TARGET_DENIED: forbidden,
  EH_CHECK_INTERVAL_TOO_SHORT: invalid,
  EH_QUOTA_SCHEDULED_CHECKS: { status: 429, error: 'quota_exceeded' },
  EH_LIST_TOO_DEEP: invalid,
  EH_TOO_MANY_STREAMS: { status: 429, error: 'too_many_requests' },
  EH_QUEUE_UNAVAILABLE: unavailable,
  EH_ISSUANCE_PENDING: unavailable,

  EH_REQUEST_MALFORMED: edgeBadRequest,
  EH_REQUEST_HEADERS_TOO_LARGE: edgeBadRequest,
  EH_LOOP_DETECTED: { status: 508, error: 'loop_detected' },
  EH_SHARE_NOT_PUBLISHED: { status: 404, error: 'not_found' },
  EH_HUB_OVERLOADED: { status: 503, error: 'overloaded' },
  EH_MTLS_REQUIRED: forbidden,
  EH_MTLS_UNAVAILABLE: forbidden,
  EH_MTLS_NO_CERT: forbidden,
  EH_MTLS_CERT_UNKNOWN: forbidden,
  EH_MTLS_CERT_DELETED: forbidden,
  EH_MTLS_CERT_EXPIRED: forbidden,
  EH_MTLS_CERT_NOT_YET_VALID: forbidden,
  EH_MTLS_CERT_OTHER_HUB: forbidden,
  EH_LOGIN_REQUIRED: { status: 401, error: 'unauthorized' },
  EH_LOGIN_UNAVAILABLE: { status: 401, error: 'unauthorized' },
  EH_LOGIN_FLOW_INVALID: forbidden,
  EH_LOGIN_REPLAYED: forbidden,
  EH_LOGIN_PROVIDER_REFUSED: forbidden,
  EH_LOGIN_EMAIL_UNVERIFIED: forbidden,
  EH_LOGIN_EMAIL_NOT_ALLOWED: forbidden,
  EH_IDP_UNREACHABLE: badGateway,
  EH_EGRESS_DENIED: forbidden,
  EH_NO_AGENT: badGateway,
  EH_TARGET_DOWN_AT_AGENTS: badGateway,
  EH_AGENT_REFUSED_TARGET: badGateway,
  EH_AGENT_TARGET_UNREACHABLE: badGateway,
  EH_TARGET_UNREACHABLE: badGateway,
  EH_TARGET_TIMEOUT: { status: 504, error: 'gateway_timeout' },
  EH_UPGRADE_NOT_CARRIED: badGateway,
  EH_UPGRADE_NOT_SUPPORTED_BY_TARGET: { status: 501, error: 'not_implemented' },
};
