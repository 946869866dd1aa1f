import type { KeyObject } from 'node:crypto';
import { errors, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import { config } from '../config.js';

/**
 * The enrollment JWT on jose, given its keys: which key signs and which keys verify is the signing keys' business
 * (domain/commands/signingKeys.ts).
 */

const JWT_ISSUER = 'hub';

const enrollmentUrl = (hubId: string) => `${config().publicBaseUrl}/hub/v2/${hubId}/client-certificates/enroll`;

export interface EnrollmentJwtRecord {
  hubId: string;
  certificateRequestTokenId: string;
  jwt: string;
  url: string;
  expiresAt: Date;
}

interface EnrollmentClaims extends JWTPayload {
  sub: string;
  aud: string;
  url: string;
  name: string;
  validYears: number;
  cn?: string;
  o?: string;
  ou?: string;
}

/** What an enrollment JWT says of its certificate request token. */
interface EnrollmentToken {
  id: string;
  hubId: string;
  /** The token string: the JWT's `sub`. */
  token: string;
  name: string;
  validYears: number;
  commonName?: string | null;
  organization?: string | null;
  organizationalUnit?: string | null;
  expiresAt: Date;
}

/**
 * A one-time JWT of ours (ES256, header kid, no jku): issuer `hub`, audience the hub, subject the token string it
 * carries, expiring with it. Certificate and agent enrollments both are one.
 */
export function signJwt(
  claims: Record<string, unknown>,
  to: { hubId: string; subject: string; expiresAt: Date },
  key: { kid: string; privateKey: KeyObject },
): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'JWT' })
    .setIssuer(JWT_ISSUER)
    .setAudience(to.hubId)
    .setSubject(to.subject)
    .setIssuedAt()
    .setExpirationTime(Math.floor(to.expiresAt.getTime() / 1000))
    .sign(key.privateKey);
}

/** Signs the enrollment JWT of a token with `key` (ES256, header kid, no jku); its exp is the token's expiry. */
export async function signEnrollmentJwt(token: EnrollmentToken, key: { kid: string; privateKey: KeyObject }): Promise<EnrollmentJwtRecord> {
  const url = enrollmentUrl(token.hubId);
  const claims: Record<string, unknown> = { url, name: token.name, validYears: token.validYears };
  if (token.commonName) claims.cn = token.commonName;
  if (token.organization) claims.o = token.organization;
  if (token.organizationalUnit) claims.ou = token.organizationalUnit;
  const jwt = await signJwt(claims, { hubId: token.hubId, subject: token.token, expiresAt: token.expiresAt }, key);
  return { hubId: token.hubId, certificateRequestTokenId: token.id, jwt, url, expiresAt: token.expiresAt };
}

/** Why a JWT was refused: a label for violations and a sentence for errors. */
export class JwtRefusal extends Error {
  constructor(
    readonly label: string,
    message: string,
  ) {
    super(message);
  }
}

/** jose's refusals as the enrollment's own: a label for violations and a sentence for errors. */
function refusal(err: unknown): JwtRefusal {
  if (err instanceof JwtRefusal) return err;
  if (err instanceof errors.JWTExpired) return new JwtRefusal('expired', 'enrollment JWT has expired');
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'aud') return new JwtRefusal('wrong_hub', 'enrollment JWT was issued for another hub');
    if (err.claim === 'nbf') return new JwtRefusal('invalid', 'enrollment JWT is not valid yet');
    if (err.reason === 'missing') return new JwtRefusal('invalid', `enrollment JWT claim '${err.claim}' is missing`);
    return new JwtRefusal('invalid', `enrollment JWT claim '${err.claim}' is invalid`);
  }
  if (err instanceof errors.JOSEAlgNotAllowed) return new JwtRefusal('invalid', `enrollment JWT must be signed with ES256 (${err.message})`);
  if (err instanceof errors.JWSSignatureVerificationFailed) return new JwtRefusal('invalid_signature', 'enrollment JWT signature does not verify');
  if (err instanceof errors.JOSENotSupported) return new JwtRefusal('invalid', `enrollment JWT header is not supported (${err.message})`);
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid) return new JwtRefusal('malformed', 'enrollment JWT is not a compact JWS');
  return new JwtRefusal('malformed', 'enrollment JWT could not be read');
}

/**
 * Verifies the enrollment JWT with jose's `jwtVerify`: ES256 only, the key by `kid` from `keyOf` (the published
 * keys), then iss, aud = the path hub, exp (required), nbf when present, and a non-empty `sub`.
 */
export async function verifyEnrollmentJwt(jwt: string, hubId: string, keyOf: (kid: string) => Promise<KeyObject | undefined>): Promise<EnrollmentClaims> {
  let payload: JWTPayload;
  // a key that could not be looked up (the database away) is no fault of the JWT: that error goes on as it is
  let lookupFailed: { err: unknown } | undefined;
  try {
    ({ payload } = await jwtVerify(
      jwt,
      async (header) => {
        if (typeof header.kid !== 'string') throw new JwtRefusal('invalid', 'enrollment JWT header has no kid');
        let key: KeyObject | undefined;
        try {
          key = await keyOf(header.kid);
        } catch (err) {
          lookupFailed = { err };
          throw err;
        }
        if (!key) throw new JwtRefusal('unknown_key', `enrollment JWT is signed by key '${header.kid}', which is not in the public key set`);
        return key;
      },
      { algorithms: ['ES256'], issuer: JWT_ISSUER, audience: hubId, requiredClaims: ['exp', 'sub'] },
    ));
  } catch (err) {
    if (lookupFailed) throw lookupFailed.err;
    throw refusal(err);
  }
  if (typeof payload.sub !== 'string' || payload.sub === '') throw new JwtRefusal('invalid', "enrollment JWT claim 'sub' is missing");
  return payload as EnrollmentClaims;
}
