import { randomBytes } from 'node:crypto';
import { UniqueConstraintError } from 'sequelize';
import { HUB_MATCHES, preparedQuery } from '../../shared/db.js';
import { badRequest, invalidState, notFound, refusal } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { CertificateRequestToken } from '../models/CertificateRequestToken.js';
import { addIsoDuration } from '../../shared/durations.js';
import { decryptSecret, encryptSecret, sha256 } from '../../shared/secrets.js';
import { config } from '../../shared/config.js';
import { signEnrollmentJwt, type EnrollmentJwtRecord } from '../../shared/pki/enrollmentJwt.js';
import { signingKeyFor } from './signingKeys.js';
import { findPage, type Page, type PageRequest } from '../../shared/paging.js';

const DEFAULT_TOKEN_TTL = 'P7D';

interface TokenInput {
  name?: string;
  commonName?: string | null;
  organization?: string | null;
  organizationalUnit?: string | null;
  expiresAt?: string;
  ttl?: string;
  validYears?: number;
}

export const nameTaken = (name: string) =>
  refusal('EH_NAME_TAKEN', `name '${name}' is already used by a certificate request token or client certificate in this hub`);

/** Runs `fn`; a unique violation (the hub's name registry, pki_names) becomes a 409 naming the name. */
export async function claimingName<T>(name: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof UniqueConstraintError) throw nameTaken(name);
    throw err;
  }
}

/** 192 random bits, URL-safe. */
const newTokenString = () => randomBytes(24).toString('base64url');

/**
 * The expiry from `expiresAt` (RFC 3339, future) or `ttl` (ISO 8601 duration); undefined when neither is given. At
 * most HUB_TOKEN_MAX_TTL ahead: a JWT lives as long as its token, and its signing key stays published until the
 * last JWT it signed expires, so this bounds how long a retired key stays in the JWKS.
 */
function expiryFrom(input: Pick<TokenInput, 'expiresAt' | 'ttl'>, now = new Date()): Date | undefined {
  const at = requestedExpiry(input, now);
  const { tokenMaxTtl, tokenMaxTtlMs } = config().security;
  if (at && at.getTime() - now.getTime() > tokenMaxTtlMs) {
    const field = input.ttl !== undefined ? 'ttl' : 'expiresAt';
    throw refusal('EH_TOKEN_TTL_TOO_LONG', `value for property '$.${field}' is beyond the maximum token lifetime ${tokenMaxTtl} (HUB_TOKEN_MAX_TTL)`);
  }
  return at;
}

function requestedExpiry(input: Pick<TokenInput, 'expiresAt' | 'ttl'>, now: Date): Date | undefined {
  if (input.expiresAt !== undefined && input.ttl !== undefined) throw badRequest("give either 'expiresAt' or 'ttl', not both");
  if (input.expiresAt !== undefined) {
    const at = new Date(input.expiresAt);
    if (at.getTime() <= now.getTime()) throw badRequest(`value for property '$.expiresAt' must be in the future (got ${input.expiresAt})`);
    return at;
  }
  if (input.ttl !== undefined) {
    const at = addIsoDuration(now, input.ttl);
    if (!at) throw badRequest(`value for property '$.ttl' must be an ISO 8601 duration such as P7D or PT12H (got '${input.ttl}')`);
    if (at.getTime() <= now.getTime()) throw badRequest(`value for property '$.ttl' must be a positive duration (got '${input.ttl}')`);
    return at;
  }
  return undefined;
}

const blankToNull = (v: string | null | undefined) => (v === undefined ? undefined : v === null || v.trim() === '' ? null : v.trim());

/** The columns of a token as the API shows them (camelCase), read without building a model instance. */
const TOKEN_COLUMNS = `id, hub_id AS "hubId", name, token_sealed AS "tokenSealed", common_name AS "commonName", organization,
  organizational_unit AS "organizationalUnit", valid_years AS "validYears", expires_at AS "expiresAt",
  spent_at AS "spentAt", created_by AS "createdBy", created_at AS "createdAt"`;

export type TokenRecord = Pick<
  CertificateRequestToken,
  'id' | 'hubId' | 'name' | 'token' | 'commonName' | 'organization' | 'organizationalUnit' | 'validYears' | 'expiresAt' | 'spentAt' | 'createdBy' | 'createdAt'
>;

/** A row as TOKEN_COLUMNS reads it: the token string only sealed. */
type TokenRow = Omit<TokenRecord, 'token'> & { tokenSealed: string };

/** A row read with TOKEN_COLUMNS as the API's record: the token string decrypted (it is kept only sealed). */
function tokenRecord(row: TokenRow, tokenString?: string): TokenRecord {
  // named fields rather than a rest/spread copy of the row: this runs on every read of a token
  return {
    id: row.id,
    hubId: row.hubId,
    name: row.name,
    token: tokenString ?? decryptSecret(row.tokenSealed),
    commonName: row.commonName,
    organization: row.organization,
    organizationalUnit: row.organizationalUnit,
    validYears: row.validYears,
    expiresAt: row.expiresAt,
    spentAt: row.spentAt,
    createdBy: row.createdBy,
    createdAt: row.createdAt,
  };
}

/**
 * The token and its entry in the hub's name registry in one autocommitted statement (one round trip): the registry's
 * primary key (hub_id, name) refuses a second owner, even from a concurrent statement, and the statement is stored
 * whole or not at all.
 */
export const CREATE_TOKEN_SQL = `WITH t AS (
    INSERT INTO certificate_request_tokens
      (id, hub_id, name, token_sealed, token_digest, common_name, organization, organizational_unit, valid_years, expires_at, created_by, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, now(), now())
    RETURNING ${TOKEN_COLUMNS}
  ), n AS (
    INSERT INTO pki_names (hub_id, name, token_id) SELECT "hubId", name, id FROM t
  )
  SELECT * FROM t`;

export async function createToken(hubId: string, input: TokenInput & { name: string }, createdBy: string): Promise<TokenRecord> {
  const expiresAt = expiryFrom(input) ?? (addIsoDuration(new Date(), DEFAULT_TOKEN_TTL) as Date);
  const tokenString = newTokenString();
  const values = [
    newId(),
    hubId,
    input.name,
    encryptSecret(tokenString),
    sha256(tokenString),
    blankToNull(input.commonName) ?? null,
    blankToNull(input.organization) ?? null,
    blankToNull(input.organizationalUnit) ?? null,
    input.validYears ?? 1,
    expiresAt,
    createdBy,
  ];
  try {
    const [token] = await preparedQuery<TokenRow>('create-certificate-request-token', CREATE_TOKEN_SQL, values);
    return tokenRecord(token, tokenString);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === '23505' && (err as { constraint?: string }).constraint === 'pki_names_pkey') throw nameTaken(input.name);
    if (code === '23503') throw badRequest('a referenced resource does not exist');
    throw err;
  }
}

/** A token by id, if it is the hub's (by its primary key alone: see HUB_MATCHES in shared/db.ts). */
export const READ_TOKEN_SQL = `SELECT ${TOKEN_COLUMNS} FROM certificate_request_tokens WHERE id = $1 AND ${HUB_MATCHES('$2')}`;

/** A token of the hub as a plain record (one prepared statement, no model instance), or 404. */
export async function readToken(hubId: string, id: string): Promise<TokenRecord> {
  const [token] = await preparedQuery<TokenRow>('read-certificate-request-token', READ_TOKEN_SQL, [id, hubId]);
  if (!token) throw notFound('certificate request token', id);
  return tokenRecord(token);
}

async function findToken(hubId: string, id: string): Promise<CertificateRequestToken> {
  const token = await CertificateRequestToken.findOne({ where: { id, hubId } });
  if (!token) throw notFound('certificate request token', id);
  return token;
}

export async function findTokenByString(hubId: string, tokenString: string): Promise<CertificateRequestToken> {
  const token = await CertificateRequestToken.findOne({ where: { tokenDigest: sha256(tokenString), hubId } });
  if (!token) throw notFound('certificate request token');
  return token;
}

const tokenState = (t: CertificateRequestToken, now = Date.now()) => (t.spentAt ? 'spent' : t.expiresAt.getTime() <= now ? 'expired' : 'valid');

/**
 * PATCH (`replaceAll` false: only given fields) or PUT (`replaceAll` true: omitted subject fields are cleared).
 * A spent token cannot change: its name now belongs to its certificate. Renames go through the name registry (the
 * foreign key cascades the new name into pki_names, whose primary key refuses a collision).
 */
export async function updateToken(hubId: string, id: string, input: TokenInput, replaceAll: boolean): Promise<CertificateRequestToken> {
  const token = await findToken(hubId, id);
  if (token.spentAt) throw invalidState('certificate request token', 'spent', 'update');
  const subject = (v: string | null | undefined) => (replaceAll ? (blankToNull(v) ?? null) : blankToNull(v));
  const changes = Object.fromEntries(
    Object.entries({
      name: input.name,
      commonName: subject(input.commonName),
      organization: subject(input.organization),
      organizationalUnit: subject(input.organizationalUnit),
      expiresAt: expiryFrom(input),
      validYears: input.validYears,
    }).filter(([, v]) => v !== undefined),
  );
  if (Object.keys(changes).length === 0) return token;
  // conditional on still being unspent: an enrollment that won meanwhile keeps its name
  const [count] = await claimingName(input.name ?? token.name, () => CertificateRequestToken.update(changes, { where: { id, hubId, spentAt: null } }));
  if (count === 0) throw invalidState('certificate request token', 'spent', 'update');
  return findToken(hubId, id);
}

export async function deleteToken(hubId: string, id: string): Promise<CertificateRequestToken> {
  const token = await findToken(hubId, id);
  // the name registry row goes with it (ON DELETE CASCADE); the enrollment JWT stops working at once
  const count = await CertificateRequestToken.destroy({ where: { id, hubId } });
  if (count === 0) throw notFound('certificate request token', id);
  return token;
}

/** The enrollment JWT of a valid token; refused (400 naming the state) for a spent or expired one. */
export async function enrollmentJwt(hubId: string, id: string): Promise<EnrollmentJwtRecord> {
  const token = await findToken(hubId, id);
  const state = tokenState(token);
  if (state !== 'valid') throw invalidState('certificate request token', state, 'create an enrollment JWT');
  return signEnrollmentJwt(token, await signingKeyFor(token.expiresAt));
}

/** One page of the hub's certificate request tokens. */
export const listTokens = (hubId: string, req: PageRequest): Promise<Page<CertificateRequestToken>> => findPage(CertificateRequestToken, { hubId }, req);
