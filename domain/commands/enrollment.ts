import { QueryTypes, type InferAttributes } from 'sequelize';
import { db, HUB_MATCHES, preparedQuery, withTransaction } from '../../shared/db.js';
import { isDomainError, refusal, type ErrorCode } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { CertificateRequestToken } from '../models/CertificateRequestToken.js';
import { ClientCertificate } from '../models/ClientCertificate.js';
import { certifiesKey, parseUploadedCertificate } from '../../shared/pki/certificates.js';
import { parseCsr, subjectMismatches, type ParsedCsr } from '../../shared/pki/csr.js';
import { JwtRefusal, verifyEnrollmentJwt } from '../../shared/pki/enrollmentJwt.js';
import { verificationKey } from './signingKeys.js';
import { issueInWorker, issueRequestOf, type IssueResult } from './pkiJobs.js';
import { sha256 } from '../../shared/secrets.js';
import { claimingName } from './certificateRequestTokens.js';
import { certificateFromReply, findCertificate, uploadedFields, type CertificateWithChain } from './clientCertificates.js';

interface Violation {
  path: '$.jwt' | '$.csr';
  label: string;
  message: string;
}

interface Checked {
  violations: Violation[];
  token?: CertificateRequestToken;
  csr?: ParsedCsr;
}

interface JwtChecked {
  violation?: Violation;
  token?: CertificateRequestToken;
  /** The token of a JWT that verified but whose token was already spent (a retry may be answered; see enrollWithJwt). */
  spent?: CertificateRequestToken;
}

const tokenRefusal = (token: CertificateRequestToken | null, now = Date.now()): Violation | undefined => {
  if (!token) return { path: '$.jwt', label: 'revoked', message: 'the certificate request token of this JWT was deleted' };
  if (token.spentAt) return { path: '$.jwt', label: 'spent', message: 'the certificate request token of this JWT was already used' };
  if (token.expiresAt.getTime() <= now) return { path: '$.jwt', label: 'expired', message: 'the certificate request token of this JWT has expired' };
  return undefined;
};

/** The code of a refused enrollment JWT, by the label its violation carries. */
const JWT_CODES: Record<string, ErrorCode> = {
  revoked: 'EH_JWT_REVOKED',
  spent: 'EH_JWT_SPENT',
  expired: 'EH_JWT_EXPIRED',
  wrong_hub: 'EH_JWT_WRONG_HUB',
  unknown_key: 'EH_JWT_UNKNOWN_KEY',
};
const jwtRefused = (violation: Violation) => refusal(JWT_CODES[violation.label] ?? 'EH_JWT_INVALID', violation.message);

/** A token's columns as a plain row, by its string (the enrollment hot path: no model machinery). */
async function tokenByString(hubId: string, tokenString: string): Promise<CertificateRequestToken | null> {
  const [row] = await preparedQuery<CertificateRequestToken>(
    'pki_token_by_string',
    `SELECT id, hub_id AS "hubId", name, common_name AS "commonName", organization, organizational_unit AS "organizationalUnit",
       valid_years AS "validYears", expires_at AS "expiresAt", spent_at AS "spentAt", created_by AS "createdBy"
     FROM certificate_request_tokens WHERE token_digest = $1 AND ${HUB_MATCHES('$2')}`,
    [sha256(tokenString), hubId],
  );
  return row ?? null;
}

/** The JWT and its token: signature, claims, then the token's state. */
async function checkJwt(hubId: string, jwt: string): Promise<JwtChecked> {
  try {
    const claims = await verifyEnrollmentJwt(jwt, hubId, verificationKey);
    const found = await tokenByString(hubId, claims.sub);
    const violation = tokenRefusal(found);
    if (!violation) return { token: found ?? undefined };
    return { violation, spent: violation.label === 'spent' ? (found ?? undefined) : undefined };
  } catch (err) {
    if (!(err instanceof JwtRefusal)) throw err;
    return { violation: { path: '$.jwt', label: err.label, message: err.message } };
  }
}

async function checkCsr(pem: string): Promise<{ csr?: ParsedCsr; violation?: Violation }> {
  try {
    return { csr: await parseCsr(pem) };
  } catch (err) {
    if (!isDomainError(err)) throw err;
    return { violation: { path: '$.csr', label: 'invalid_csr', message: err.message } };
  }
}

/** Every check of an enrollment (JWT, its token, the CSR, the subject constraints), as violations. Changes nothing. */
export async function checkEnrollment(hubId: string, input: { jwt: string; csr: string }): Promise<Checked> {
  const jwt = await checkJwt(hubId, input.jwt);
  const { csr, violation } = await checkCsr(input.csr);
  const violations = [jwt.violation, violation].filter((v): v is Violation => v !== undefined);
  if (jwt.token && csr) {
    for (const message of subjectMismatches(csr, jwt.token)) violations.push({ path: '$.csr', label: 'subject_mismatch', message });
  }
  return { violations, token: jwt.token, csr };
}

/**
 * The certificate already issued for a spent token, when it certifies the same public key as this CSR: a retry of an
 * enrollment whose first request stopped waiting (503) while its job went on to issue.
 */
async function issuedForSameKey(hubId: string, tokenId: string, csr: ParsedCsr): Promise<string | undefined> {
  const [row] = await preparedQuery<{ id: string; certificate_pem: string }>(
    'pki_certificate_of_token',
    `SELECT id, certificate_pem FROM client_certificates WHERE certificate_request_token_id = $1 AND ${HUB_MATCHES('$2')}`,
    [tokenId, hubId],
  );
  if (!row) return undefined;
  return certifiesKey(row.certificate_pem, csr.spkiDer) ? row.id : undefined;
}

/**
 * Redeems an enrollment JWT: a JWT problem is 403 (answered before the CSR is even parsed: a request without a valid
 * JWT costs no CSR work), a CSR problem 400 (naming every subject mismatch). The worker spends the token and stores
 * the certificate in one transaction, so of many concurrent requests one wins. A retry with the same JWT and the
 * same public key after the token was spent gets the certificate that was issued (`replayed`), so a request that
 * stopped waiting (503) does not burn the token; a different key still gets 403.
 */
export async function enrollWithJwt(
  hubId: string,
  input: { jwt: string; csr: string },
): Promise<{ certificate: InferAttributes<ClientCertificate>; replayed: boolean }> {
  const jwt = await checkJwt(hubId, input.jwt);
  if (jwt.violation && !jwt.spent) throw jwtRefused(jwt.violation);
  const { csr, violation } = await checkCsr(input.csr);
  if (jwt.spent) {
    const issued = csr && (await issuedForSameKey(hubId, jwt.spent.id, csr));
    if (!issued) throw jwtRefused(jwt.violation as Violation);
    return { certificate: await findCertificate(hubId, issued), replayed: true };
  }
  if (violation) throw refusal('EH_CSR_INVALID', violation.message);
  const t = jwt.token as CertificateRequestToken;
  const mismatches = subjectMismatches(csr as ParsedCsr, t);
  if (mismatches.length) throw refusal('EH_CSR_SUBJECT_MISMATCH', mismatches.join('; '));
  let issued: IssueResult;
  try {
    issued = await issueInWorker({
      hubId,
      payload: { mode: 'redeem', ...issueRequestOf(csr as ParsedCsr), tokenId: t.id, validYears: t.validYears },
      createdBy: `certificate-request-token:${t.name}`,
    });
  } catch (err) {
    // spent meanwhile: by an earlier request of the same caller (same key) that is still being answered?
    const earlier = isDomainError(err, 'EH_TOKEN_SPENT') ? await issuedForSameKey(hubId, t.id, csr as ParsedCsr) : undefined;
    if (!earlier) throw err;
    return { certificate: await findCertificate(hubId, earlier), replayed: true };
  }
  return { certificate: await issuedCertificate(hubId, issued), replayed: false };
}

/** The certificate a redemption job issued: as the job handed it back, or read (a job retried after its commit). */
function issuedCertificate(hubId: string, issued: IssueResult): Promise<CertificateWithChain> {
  return issued.certificate ? certificateFromReply(issued.certificate) : findCertificate(hubId, issued.certificateId);
}

/** The token-in-path form: unknown or spent is 403, expired 401; no subject constraint. */
async function usableToken(hubId: string, tokenString: string): Promise<CertificateRequestToken> {
  const token = await CertificateRequestToken.findOne({ where: { tokenDigest: sha256(tokenString), hubId } });
  if (!token || token.spentAt) throw refusal('EH_TOKEN_UNUSABLE', 'certificate request token not found or already used');
  if (token.expiresAt.getTime() <= Date.now()) throw refusal('EH_TOKEN_EXPIRED', 'certificate request token has expired');
  return token;
}

export async function redeemTokenInPath(
  hubId: string,
  tokenString: string,
  input: { type: 'CSR' | 'CERTIFICATE'; value: string; name?: string },
): Promise<InferAttributes<ClientCertificate>> {
  const token = await usableToken(hubId, tokenString);
  const createdBy = `certificate-request-token:${token.name}`;
  if (input.type === 'CSR') {
    const csr = await parseCsr(input.value);
    const payload = { mode: 'redeem' as const, ...issueRequestOf(csr), tokenId: token.id, validYears: token.validYears };
    return issuedCertificate(hubId, await issueInWorker({ hubId, payload, createdBy }));
  }
  const info = parseUploadedCertificate(input.value);
  const name = input.name ?? token.name;
  return claimingName(name, () =>
    withTransaction(async (transaction) => {
      const [spent] = await db().query<{ name: string }>(
        `UPDATE certificate_request_tokens SET spent_at = now(), updated_at = now()
         WHERE id = :id AND hub_id = :hubId AND spent_at IS NULL AND expires_at > now() RETURNING name`,
        { replacements: { id: token.id, hubId }, type: QueryTypes.SELECT, transaction },
      );
      if (!spent) throw refusal('EH_TOKEN_UNUSABLE', 'certificate request token not found or already used');
      const cert = await ClientCertificate.create(
        { id: newId(), hubId, name, createdBy, certificateRequestTokenId: token.id, ...uploadedFields(info) },
        { transaction },
      );
      if (name === spent.name) {
        await db().query(`UPDATE pki_names SET token_id = NULL, certificate_id = :certId WHERE token_id = :tokenId`, {
          replacements: { certId: cert.id, tokenId: token.id },
          transaction,
        });
      } else {
        await db().query(`DELETE FROM pki_names WHERE token_id = :tokenId`, { replacements: { tokenId: token.id }, transaction });
        await db().query(`INSERT INTO pki_names (hub_id, name, certificate_id) VALUES (:hubId, :name, :certId)`, {
          replacements: { hubId, name, certId: cert.id },
          transaction,
        });
      }
      return cert;
    }),
  );
}
