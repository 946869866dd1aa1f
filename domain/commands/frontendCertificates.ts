import { config } from '../../shared/config.js';
import { AcmeAccount } from '../models/AcmeAccount.js';
import { AcmeValidationRecord } from '../models/AcmeValidationRecord.js';
import { FrontendIssuer } from '../models/FrontendIssuer.js';
import type { CaMaterial, IssuedCertificate } from '../../shared/providers/certificateIssuer.js';
import type { AcmeAccountKey } from '../../shared/providers/certificateIssuerAcme.js';
import { normalizeName } from '../../shared/providers/dns.js';
import type { ValidationZone } from '../../shared/providers/dnsValidationZone.js';
import { decryptSecret, encryptSecret } from '../../shared/secrets.js';

/**
 * The issuers, loaded on first use: @peculiar/x509 and acme-client (with axios and their DI container) cost a
 * process about a quarter of a second of CPU to load, and only a frontend's certificate needs them, not every start
 * of the API, the worker and the clock.
 */
const localIssuer = () => import('../../shared/providers/certificateIssuer.js');
const acmeIssuer = () => import('../../shared/providers/certificateIssuerAcme.js');

/**
 * What the certificate issuers keep: the service's own frontend CA, the ACME account and the DNS-01 validation
 * records, in PostgreSQL (keys sealed). The providers get them as plain values and return what is new.
 */

const LOCAL_CA = 'local';

/** The local frontend CA, created once; concurrent first uses agree on the row that won the insert. */
export async function localFrontendCa(): Promise<CaMaterial> {
  let row = await FrontendIssuer.findByPk(LOCAL_CA);
  if (!row) {
    const created = await (await localIssuer()).createLocalCa();
    await FrontendIssuer.findOrCreate({
      where: { name: LOCAL_CA },
      defaults: { name: LOCAL_CA, certificatePem: created.certificatePem, privateKeySealed: encryptSecret(created.privateKeyPem) },
    });
    row = await FrontendIssuer.findByPk(LOCAL_CA);
    if (!row) throw new Error('the local frontend CA could not be stored');
  }
  return { certificatePem: row.certificatePem, privateKeyPem: decryptSecret(row.privateKeySealed) };
}

/** The validation zone's records, shared by every responder through the database. */
export const validationRecords: ValidationZone = {
  async publish(name, value) {
    await AcmeValidationRecord.findOrCreate({ where: { name: normalizeName(name), value }, defaults: { name: normalizeName(name), value } });
  },
  async withdraw(name, value) {
    await AcmeValidationRecord.destroy({ where: { name: normalizeName(name), value } });
  },
  async lookup(name) {
    return (await AcmeValidationRecord.findAll({ where: { name }, attributes: ['value'] })).map((r) => r.value);
  },
};

/** The account of this ACME directory: its key created once (concurrent first uses agree on the row that won). */
async function acmeAccount(directoryUrl: string): Promise<AcmeAccountKey> {
  const existing = await AcmeAccount.findByPk(directoryUrl);
  const { newAcmeAccountKey } = await acmeIssuer();
  const [row] = existing
    ? [existing]
    : await AcmeAccount.findOrCreate({
        where: { directoryUrl },
        defaults: { directoryUrl, accountUrl: null, privateKeySealed: encryptSecret(newAcmeAccountKey()) },
      });
  return { keyPem: decryptSecret(row.privateKeySealed), accountUrl: row.accountUrl ?? undefined };
}

/** A wildcard server certificate for the domain from the service's own frontend CA (the edge's standard frontends). */
export async function issueFromLocalCa(hostname: string): Promise<IssuedCertificate> {
  const { localCertificateIssuer } = await localIssuer();
  return localCertificateIssuer(await localFrontendCa()).issue({ hostname, validationName: '', validationValue: '' });
}

/**
 * A custom frontend's certificate: from the ACME directory when HUB_ACME_DIRECTORY_URL is set (its validation
 * record at validationValue; the account's URL kept once registered), from the local CA otherwise.
 */
export async function issueFrontendCertificate(input: { hostname: string; validationName: string; validationValue: string }): Promise<IssuedCertificate> {
  const settings = config().acme;
  if (!settings) return issueFromLocalCa(input.hostname);
  const account = await acmeAccount(settings.directoryUrl);
  const { acmeCertificateIssuer } = await acmeIssuer();
  const issued = await acmeCertificateIssuer(settings, account, validationRecords).issue(input);
  if (!account.accountUrl && issued.accountUrl) {
    await AcmeAccount.update({ accountUrl: issued.accountUrl }, { where: { directoryUrl: settings.directoryUrl, accountUrl: null } });
  }
  return issued;
}
