import { QueryTypes, type InferAttributes } from 'sequelize';
import { db, preparedQuery, withTransaction } from '../db.js';
import { ApiError, badRequest, forbidden, unauthorized } from '../errors.js';
import { newId } from '../ids.js';
import { CertificateRequestToken } from '../models/CertificateRequestToken.js';
import { ClientCertificate } from '../models/ClientCertificate.js';
import { parseUploadedCertificate } from '../pki/certificates.js';
import { parseCsr, subjectMismatches, type ParsedCsr } from '../pki/csr.js';
import { JwtRefusal, verifyEnrollmentJwt } from '../pki/enrollmentJwt.js';
import { issueInWorker } from '../pki/issuance.js';
import { sha256 } from '../secrets.js';
import { claimingName } from './certificateRequestTokens.js';
import { findCertificate, uploadedFields } from './clientCertificates.js';

export interface Violation {
  path: '$.jwt' | '$.csr';
  label: string;
  message: string;
}

interface Checked {
  violations: Violation[];
  token?: CertificateRequestToken;
  csr?: ParsedCsr;
}

const tokenRefusal = (token: CertificateRequestToken | null, now = Date.now()): Violation | undefined => {
  if (!token) return { path: '$.jwt', label: 'revoked', message: 'the certificate request token of this JWT was deleted' };
  if (token.spentAt) return { path: '$.jwt', label: 'spent', message: 'the certificate request token of this JWT was already used' };
  if (token.expiresAt.getTime() <= now) return { path: '$.jwt', label: 'expired', message: 'the certificate request token of this JWT has expired' };
  return undefined;
};

/** A token's columns as a plain row, by its string (the enrollment hot path: no model machinery). */
async function tokenByString(hubId: string, tokenString: string): Promise<CertificateRequestToken | null> {
  const [row] = await preparedQuery<CertificateRequestToken>(
    'pki_token_by_string',
    `SELECT id, hub_id AS "hubId", name, token, common_name AS "commonName", organization, organizational_unit AS "organizationalUnit",
       valid_years AS "validYears", expires_at AS "expiresAt", spent_at AS "spentAt", created_by AS "createdBy"
     FROM certificate_request_tokens WHERE token_digest = $1 AND hub_id = $2`,
    [sha256(tokenString), hubId],
  );
  return row ?? null;
}

/** Every check of an enrollment (JWT, its token, the CSR, the subject constraints), as violations. Changes nothing. */
export async function checkEnrollment(hubId: string, input: { jwt: string; csr: string }): Promise<Checked> {
  const violations: Violation[] = [];
  let token: CertificateRequestToken | undefined;
  try {
    const claims = await verifyEnrollmentJwt(input.jwt, hubId);
    const found = await tokenByString(hubId, claims.sub);
    const refusal = tokenRefusal(found);
    if (refusal) violations.push(refusal);
    else token = found ?? undefined;
  } catch (err) {
    if (!(err instanceof JwtRefusal)) throw err;
    violations.push({ path: '$.jwt', label: err.label, message: err.message });
  }
  let csr: ParsedCsr | undefined;
  try {
    csr = parseCsr(input.csr);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    violations.push({ path: '$.csr', label: 'invalid_csr', message: err.message });
  }
  if (token && csr) {
    for (const message of subjectMismatches(csr, token)) violations.push({ path: '$.csr', label: 'subject_mismatch', message });
  }
  return { violations, token, csr };
}

/**
 * Redeems an enrollment JWT: a JWT problem is 403, a CSR problem 400 (naming every subject mismatch). The worker
 * spends the token and stores the certificate in one transaction, so of many concurrent requests one wins.
 */
export async function enrollWithJwt(hubId: string, input: { jwt: string; csr: string }): Promise<InferAttributes<ClientCertificate>> {
  const { violations, token, csr } = await checkEnrollment(hubId, input);
  const jwtProblem = violations.find((v) => v.path === '$.jwt');
  if (jwtProblem) throw forbidden(jwtProblem.message);
  if (violations.length) throw badRequest(violations.map((v) => v.message).join('; '));
  const t = token as CertificateRequestToken;
  const { certificateId } = await issueInWorker({
    hubId,
    payload: { mode: 'redeem', csr: input.csr, subject: (csr as ParsedCsr).subjectText, tokenId: t.id, validYears: t.validYears },
    createdBy: `certificate-request-token:${t.name}`,
  });
  return findCertificate(hubId, certificateId);
}

/** The token-in-path form: unknown or spent is 403, expired 401; no subject constraint. */
async function usableToken(hubId: string, tokenString: string): Promise<CertificateRequestToken> {
  const token = await CertificateRequestToken.findOne({ where: { tokenDigest: sha256(tokenString), hubId } });
  if (!token || token.spentAt) throw forbidden('certificate request token not found or already used');
  if (token.expiresAt.getTime() <= Date.now()) throw unauthorized('certificate request token has expired');
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
    const csr = parseCsr(input.value);
    const payload = { mode: 'redeem' as const, csr: input.value, subject: csr.subjectText, tokenId: token.id, validYears: token.validYears };
    const { certificateId } = await issueInWorker({ hubId, payload, createdBy });
    return findCertificate(hubId, certificateId);
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
      if (!spent) throw forbidden('certificate request token not found or already used');
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
