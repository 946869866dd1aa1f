import type { ErrorCode } from '../../../shared/errors.js';

/** A login that cannot go on: answered by the login flow as the edge's answer of its code (JSON `{error, message}`). */
export class LoginRefusal extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export const refuse = (code: ErrorCode, message: string) => new LoginRefusal(code, message);

export function providerFailure(err: unknown): LoginRefusal {
  if (err instanceof LoginRefusal) return err;
  const e = err as { error?: string; error_description?: string; code?: string; cause?: { error?: string; error_description?: string } };
  const error = e.error ?? e.cause?.error;
  if (error)
    return refuse(
      'EH_LOGIN_PROVIDER_REFUSED',
      `the identity provider refused the login: ${error}${(e.error_description ?? e.cause?.error_description) ? ` (${e.error_description ?? e.cause?.error_description})` : ''}`,
    );
  if (e.code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' || e.code === 'OAUTH_JWT_CLAIM_COMPARISON_FAILED' || e.code === 'OAUTH_INVALID_RESPONSE')
    return refuse('EH_LOGIN_PROVIDER_REFUSED', `the identity provider's answer did not verify: ${message(err)}`);
  return new LoginRefusal('EH_IDP_UNREACHABLE', `the identity provider could not complete the login: ${message(err)}`);
}

export function message(err: unknown): string {
  const e = err as Error & { cause?: Error & { code?: string } };
  const text = e?.cause && e.cause.message && e.cause.message !== e.message ? `${e.message} (${e.cause.code ?? e.cause.message})` : (e?.message ?? String(err));
  return text.replace(/\s+/g, ' ').trim();
}
