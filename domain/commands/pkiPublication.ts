/**
 * What the web process publishes without authentication about a CA (`/pki/{hubId}/...`, `/pki/root/...`): its
 * certificate and its current CRL, as the worker signed and stored it (crlPublication.ts). Nothing here loads a key.
 */
import { preparedQuery } from '../../shared/db.js';
import { notFound, unavailable } from '../../shared/errors.js';
import { pemToDer } from '../../shared/pki/der.js';
import { waitForPkiJob } from './pkiJobs.js';
import { requestCrl } from './revocations.js';

export interface Authority {
  id: string;
  hubId: string | null;
  certificatePem: string;
}

/** The hub's issuing CA, or the root CA for `root`; 404 when there is none. */
export async function authorityOf(hubId: string): Promise<Authority> {
  const rows =
    hubId === 'root'
      ? await preparedQuery<Authority>(
          'pki_public_root',
          `SELECT id, hub_id AS "hubId", certificate_pem AS "certificatePem" FROM certificate_authorities WHERE kind = 'ROOT'`,
          [],
        )
      : await preparedQuery<Authority>(
          'pki_public_issuing',
          `SELECT id, hub_id AS "hubId", certificate_pem AS "certificatePem" FROM certificate_authorities WHERE kind = 'ISSUING' AND hub_id = $1`,
          [hubId],
        );
  if (!rows[0]) throw notFound('certificate authority of hub', hubId);
  return rows[0];
}

/** A CA's certificate (DER), for the Authority Information Access caIssuers URL. */
export async function caCertificate(hubId: string): Promise<Buffer> {
  return pemToDer((await authorityOf(hubId)).certificatePem, ['CERTIFICATE']) as Buffer;
}

interface PublishedCrl {
  der: Buffer;
  crlNumber: number;
  thisUpdate: Date;
  nextUpdate: Date;
}

const readCrl = async (caId: string): Promise<PublishedCrl | undefined> => {
  const [row] = await preparedQuery<{ der: Buffer; crlNumber: string; thisUpdate: Date; nextUpdate: Date }>(
    'pki_public_crl',
    `SELECT der, crl_number AS "crlNumber", this_update AS "thisUpdate", next_update AS "nextUpdate" FROM certificate_revocation_lists WHERE ca_id = $1`,
    [caId],
  );
  return row && { ...row, crlNumber: Number(row.crlNumber) };
};

/**
 * Asks the worker for a CA's first CRL (and responder) and waits for it (at most HUB_ISSUANCE_WAIT_MS): a CA made
 * moments ago has not been published yet. 503 when it could not be made in time.
 */
export async function awaitPublication(ca: Authority): Promise<void> {
  const execution = await requestCrl(ca.id, ca.hubId, 'scheduler');
  if (execution.status !== 'SUCCEEDED') {
    await waitForPkiJob(execution.processId).catch(() => {
      throw unavailable(`the certificate authority's revocation list is being made (execution ${execution.id}); retry shortly`, 2);
    });
  }
}

/** The CA's current CRL (the hub's issuing CA, or the root's for `root`); 404 when there is no such CA. */
export async function currentCrl(hubId: string): Promise<PublishedCrl> {
  const ca = await authorityOf(hubId);
  let crl = await readCrl(ca.id);
  if (!crl) {
    await awaitPublication(ca);
    crl = await readCrl(ca.id);
  }
  if (!crl) throw unavailable("the certificate authority's revocation list is being made; retry shortly", 2);
  return crl;
}
