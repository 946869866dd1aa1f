import type { LRUCache } from 'lru-cache';
import { QueryTypes, type InferAttributes } from 'sequelize';
import { db, withTransaction } from '../../shared/db.js';
import { badRequest, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { ClientCertificate } from '../models/ClientCertificate.js';
import { isCertificatePem, parseUploadedCertificate, type CertificateInfo } from '../../shared/pki/certificates.js';
import { cached, pkiCache } from '../../shared/pki/cache.js';
import { isCsrPem, parseCsr } from '../../shared/pki/csr.js';
import { issueInWorker, issueRequestOf } from './pkiJobs.js';
import { HUB_MATCHES, preparedQuery } from '../../shared/db.js';
import { claimingName, nameTaken } from './certificateRequestTokens.js';
import { findPage, type Page, type PageRequest } from '../../shared/paging.js';
import { recordRevocation, requestCrlsQuietly } from './revocations.js';
import { REVOCATION_REASONS } from '../../shared/pki/crl.js';

interface CertificateInput {
  name?: string;
  value?: string;
  validYears?: number;
}

type Value = { kind: 'certificate'; info: CertificateInfo } | { kind: 'csr'; request: ReturnType<typeof issueRequestOf> };

/** A PEM certificate (upload) or a PEM CSR (to be issued); anything else is a 400 that says which was expected. */
async function readValue(value: string): Promise<Value> {
  if (isCertificatePem(value)) return { kind: 'certificate', info: parseUploadedCertificate(value) };
  // a bad CSR is refused here, before any job
  if (isCsrPem(value)) return { kind: 'csr', request: issueRequestOf(await parseCsr(value)) };
  throw badRequest("value for property '$.value' must be a PEM certificate (-----BEGIN CERTIFICATE-----) or a PEM CSR (-----BEGIN CERTIFICATE REQUEST-----)");
}

export const uploadedFields = (info: CertificateInfo) => ({
  source: 'UPLOAD' as const,
  certificatePem: info.pem,
  issuerId: null,
  fingerprintSha256: info.fingerprintSha256,
  subject: info.subject,
  serialNumber: info.serialNumber,
  notBefore: info.notBefore,
  notAfter: info.notAfter,
});

async function nameIsFree(hubId: string, name: string, exceptCertificateId?: string): Promise<boolean> {
  const rows = await db().query(`SELECT 1 FROM pki_names WHERE hub_id = :hubId AND name = :name AND certificate_id IS DISTINCT FROM :except`, {
    replacements: { hubId, name, except: exceptCertificateId ?? null },
    type: QueryTypes.SELECT,
  });
  return rows.length === 0;
}

/** A stored certificate with the PEM chain of its issuers (issuing CA, then root) when this service issued it. */
export type CertificateWithChain = InferAttributes<ClientCertificate> & { chainPem: string | null };

/** A client_certificates row as the attributes of the model (also read from a RETURNING *). */
export const CERTIFICATE_COLUMNS = `id, hub_id AS "hubId", name, source, certificate_pem AS "certificatePem", issuer_id AS "issuerId",
  fingerprint_sha256 AS "fingerprintSha256", subject, serial_number AS "serialNumber", not_before AS "notBefore",
  not_after AS "notAfter", certificate_request_token_id AS "certificateRequestTokenId", created_by AS "createdBy",
  created_at AS "createdAt", updated_at AS "updatedAt"`;

/** Issuer chains by issuing CA id, in a bounded cache with a TTL (HUB_PKI_CACHE_MAX, HUB_PKI_CACHE_TTL). */
let chains: LRUCache<string, Promise<string>> | undefined;

function chainOf(issuerId: string): Promise<string> {
  chains ??= pkiCache<Promise<string>>();
  return cached(chains, issuerId, () =>
    preparedQuery<{ chain: string }>(
      'pki_issuer_chain',
      `SELECT i.certificate_pem || r.certificate_pem AS chain FROM certificate_authorities i, certificate_authorities r
       WHERE i.id = $1 AND r.kind = 'ROOT'`,
      [issuerId],
    ).then(([row]) => {
      if (!row) throw new Error(`issuing CA ${issuerId} not found`);
      return row.chain;
    }),
  );
}

/**
 * A certificate row a pki job wrote and handed back through its return value (JSON: its dates as strings), with its
 * chain: the answer without reading the row back.
 */
export async function certificateFromReply(row: Record<string, unknown>): Promise<CertificateWithChain> {
  const date = (v: unknown) => (v === null || v === undefined ? v : new Date(v as string));
  const cert = {
    ...row,
    notBefore: date(row.notBefore),
    notAfter: date(row.notAfter),
    createdAt: date(row.createdAt),
    updatedAt: date(row.updatedAt),
  } as unknown as InferAttributes<ClientCertificate>;
  return { ...cert, chainPem: cert.issuerId ? await chainOf(cert.issuerId) : null };
}

/** How many issuer chains this process holds now (expired ones not counted). */
export function cachedChainCount(): number {
  chains?.purgeStale();
  return chains?.size ?? 0;
}

/** A certificate by id, if it is the hub's (by its primary key alone: see HUB_MATCHES in shared/db.ts). */
export const FIND_CERTIFICATE_SQL = `SELECT ${CERTIFICATE_COLUMNS} FROM client_certificates WHERE id = $1 AND ${HUB_MATCHES('$2')}`;

/** A certificate's columns as a plain row (read on the enrollment hot path, so without model machinery). */
export async function findCertificate(hubId: string, id: string): Promise<CertificateWithChain> {
  const [row] = await preparedQuery<InferAttributes<ClientCertificate>>('pki_find_certificate', FIND_CERTIFICATE_SQL, [id, hubId]);
  const cert = row ? { ...row, chainPem: row.issuerId ? await chainOf(row.issuerId) : null } : undefined;
  if (!cert) throw notFound('client certificate', id);
  return cert;
}

export async function createCertificate(
  hubId: string,
  input: Required<Pick<CertificateInput, 'name' | 'value'>> & CertificateInput,
  createdBy: string,
): Promise<InferAttributes<ClientCertificate>> {
  const value = await readValue(input.value);
  if (value.kind === 'certificate') {
    return claimingName(input.name, () =>
      withTransaction(async (transaction) => {
        const cert = await ClientCertificate.create({ id: newId(), hubId, name: input.name, createdBy, ...uploadedFields(value.info) }, { transaction });
        await db().query(`INSERT INTO pki_names (hub_id, name, certificate_id) VALUES (:hubId, :name, :id)`, {
          replacements: { hubId, name: input.name, id: cert.id },
          type: QueryTypes.INSERT,
          transaction,
        });
        return cert;
      }),
    );
  }
  // a fast answer for the common collision; the worker's transaction is what guarantees it
  if (!(await nameIsFree(hubId, input.name))) throw nameTaken(input.name);
  const { certificateId } = await issueInWorker({
    hubId,
    payload: { mode: 'create', ...value.request, name: input.name, validYears: input.validYears ?? 1 },
    createdBy,
  });
  return findCertificate(hubId, certificateId);
}

/** PATCH (any of name, value) or PUT (name and value). A CSR value re-issues the certificate in the worker. */
export async function updateCertificate(hubId: string, id: string, input: CertificateInput, createdBy: string): Promise<CertificateWithChain> {
  const cert = await findCertificate(hubId, id);
  const name = input.name ?? cert.name;
  const value = input.value === undefined ? undefined : await readValue(input.value);
  if (value?.kind === 'csr') {
    if (!(await nameIsFree(hubId, name, id))) throw nameTaken(name);
    await issueInWorker({
      hubId,
      payload: { mode: 'replace', ...value.request, certificateId: id, name, validYears: input.validYears ?? 1 },
      createdBy,
      resourceId: id,
    });
    return findCertificate(hubId, id);
  }
  const changes = { name, ...(value ? uploadedFields(value.info) : {}) };
  // a rename cascades into the name registry, whose primary key refuses a collision; a certificate our CA issued that
  // an uploaded one replaces is revoked (superseded) in the same transaction
  const revoked = await claimingName(name, () =>
    withTransaction(async (transaction) => {
      await ClientCertificate.update(changes, { where: { id, hubId }, transaction });
      if (!value || !cert.issuerId) return undefined;
      await recordRevocation(
        { caId: cert.issuerId, hubId, serialNumber: cert.serialNumber, certificateId: id, reasonCode: REVOCATION_REASONS.superseded, revokedBy: createdBy },
        transaction,
      );
      return cert.issuerId;
    }),
  );
  if (revoked) await requestCrlsQuietly([{ caId: revoked, hubId }], 'scheduler');
  return findCertificate(hubId, id);
}

/**
 * Deletes a certificate. One our CA issued is revoked in the same transaction (with `reasonCode`, default
 * unspecified) and its CA's CRL is asked for once it committed; an uploaded one is just deleted.
 */
export async function deleteCertificate(hubId: string, id: string, reasonCode = 0, revokedBy = 'api'): Promise<InferAttributes<ClientCertificate>> {
  const cert = await findCertificate(hubId, id);
  const revoked = await withTransaction(async (transaction) => {
    const rows = (await db().query(
      `DELETE FROM client_certificates WHERE id = :id AND hub_id = :hubId RETURNING issuer_id AS "issuerId", serial_number AS "serialNumber"`,
      {
        replacements: { id, hubId },
        type: QueryTypes.SELECT,
        transaction,
      },
    )) as { issuerId: string | null; serialNumber: string }[];
    if (rows.length === 0) throw notFound('client certificate', id);
    const [row] = rows;
    if (row.issuerId)
      await recordRevocation({ caId: row.issuerId, hubId, serialNumber: row.serialNumber, certificateId: id, reasonCode, revokedBy }, transaction);
    return row.issuerId;
  });
  if (revoked) await requestCrlsQuietly([{ caId: revoked, hubId }], 'scheduler');
  return cert;
}

/** One page of the hub's client certificates, without their PEM values (the list never shows them). */
export const listCertificates = (hubId: string, req: PageRequest): Promise<Page<ClientCertificate>> =>
  findPage(ClientCertificate, { hubId }, req, { attributes: ['id', 'name', 'hubId', 'createdAt', 'createdBy'] });
