import { verify } from 'node:crypto';
import { SignJWT, type JWTPayload } from 'jose';
import { config } from '../config.js';
import type { CertificateRequestToken } from '../models/CertificateRequestToken.js';
import { activeSigningKey, recordJwtExpiry, verificationKey } from './signingKeys.js';

export const JWT_ISSUER = 'hub';

export const enrollmentUrl = (hubId: string) => `${config().publicBaseUrl}/hub/v2/${hubId}/client-certificates/enroll`;

export interface EnrollmentJwtRecord {
  hubId: string;
  certificateRequestTokenId: string;
  jwt: string;
  url: string;
  expiresAt: Date;
}

export interface EnrollmentClaims extends JWTPayload {
  sub: string;
  aud: string;
  url: string;
  name: string;
  validYears: number;
  cn?: string;
  o?: string;
  ou?: string;
}

/** Signs the enrollment JWT of a token (ES256, header kid, no jku); its exp is the token's expiry. */
export async function signEnrollmentJwt(token: CertificateRequestToken): Promise<EnrollmentJwtRecord> {
  const url = enrollmentUrl(token.hubId);
  const claims: Record<string, unknown> = { url, name: token.name, validYears: token.validYears };
  if (token.commonName) claims.cn = token.commonName;
  if (token.organization) claims.o = token.organization;
  if (token.organizationalUnit) claims.ou = token.organizationalUnit;
  for (let attempt = 0; ; attempt++) {
    const key = await activeSigningKey({ fresh: attempt > 0 });
    // recorded before the JWT exists, so the key can never be dropped while this JWT is valid
    if (!(await recordJwtExpiry(key.kid, token.expiresAt))) {
      if (attempt < 2) continue;
      throw new Error('the signing key vanished while signing');
    }
    const jwt = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'JWT' })
      .setIssuer(JWT_ISSUER)
      .setAudience(token.hubId)
      .setSubject(token.token)
      .setIssuedAt()
      .setExpirationTime(Math.floor(token.expiresAt.getTime() / 1000))
      .sign(key.privateKey);
    return { hubId: token.hubId, certificateRequestTokenId: token.id, jwt, url, expiresAt: token.expiresAt };
  }
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

function decodeSegment(segment: string, what: string): Record<string, unknown> {
  try {
    const value = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
    if (value && typeof value === 'object' && !Array.isArray(value)) return value;
  } catch {
    /* below */
  }
  throw new JwtRefusal('malformed', `enrollment JWT ${what} is not a base64url JSON object`);
}

/**
 * Verifies signature (ES256, by kid, against our published keys), then iss, aud = the path hub, and exp. The signature
 * check is node:crypto on a cached KeyObject: synchronous and several times cheaper than a WebCrypto round trip,
 * which matters on the enrollment hot path.
 */
export async function verifyEnrollmentJwt(jwt: string, hubId: string): Promise<EnrollmentClaims> {
  const segments = jwt.split('.');
  if (segments.length !== 3 || segments.some((s) => !/^[A-Za-z0-9_-]*$/.test(s))) throw new JwtRefusal('malformed', 'enrollment JWT is not a compact JWS');
  const [encodedHeader, encodedPayload, encodedSignature] = segments;
  const header = decodeSegment(encodedHeader, 'header');
  if (header.alg !== 'ES256') throw new JwtRefusal('invalid', `enrollment JWT must be signed with ES256 (got ${String(header.alg)})`);
  if (typeof header.kid !== 'string') throw new JwtRefusal('invalid', 'enrollment JWT header has no kid');
  if (header.crit !== undefined) throw new JwtRefusal('invalid', 'enrollment JWT header has critical extensions');
  const key = await verificationKey(header.kid);
  if (!key) throw new JwtRefusal('unknown_key', `enrollment JWT is signed by key '${header.kid}', which is not in the public key set`);
  const signature = Buffer.from(encodedSignature, 'base64url');
  const signed = Buffer.from(`${encodedHeader}.${encodedPayload}`, 'latin1');
  if (signature.length !== 64 || !verify('sha256', signed, { key, dsaEncoding: 'ieee-p1363' }, signature)) {
    throw new JwtRefusal('invalid_signature', 'enrollment JWT signature does not verify');
  }
  const claims = decodeSegment(encodedPayload, 'payload');
  const now = Math.floor(Date.now() / 1000);
  if (claims.iss !== JWT_ISSUER) throw new JwtRefusal('invalid', "enrollment JWT claim 'iss' is invalid");
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!audiences.includes(hubId)) throw new JwtRefusal('wrong_hub', 'enrollment JWT was issued for another hub');
  if (typeof claims.exp !== 'number') throw new JwtRefusal('invalid', "enrollment JWT claim 'exp' is missing");
  if (claims.exp <= now) throw new JwtRefusal('expired', 'enrollment JWT has expired');
  if (typeof claims.nbf === 'number' && claims.nbf > now) throw new JwtRefusal('invalid', 'enrollment JWT is not valid yet');
  if (typeof claims.sub !== 'string' || claims.sub === '') throw new JwtRefusal('invalid', "enrollment JWT claim 'sub' is missing");
  return claims as EnrollmentClaims;
}
