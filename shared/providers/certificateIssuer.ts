import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

export interface IssuedCertificate {
  certificatePem: string;
  /** PKCS#8 PEM of the certificate's private key; the caller seals it. */
  privateKeyPem: string;
  notAfter: Date;
  issuer: string;
  /** ACME only: the URL of the account the certificate was ordered with (registered on first use). */
  accountUrl?: string;
}

/** Issues the TLS certificate of a custom frontend once its validation record is in place. */
export interface CertificateIssuer {
  readonly name: string;
  issue(input: { hostname: string; validationName: string; validationValue: string }): Promise<IssuedCertificate>;
}

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY = 86_400_000;

const toPem = (der: ArrayBuffer, label: string) =>
  `-----BEGIN ${label}-----\n${Buffer.from(der)
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '')}\n-----END ${label}-----\n`;

async function exportPrivateKey(key: CryptoKey): Promise<string> {
  return toPem(await webcrypto.subtle.exportKey('pkcs8', key as webcrypto.CryptoKey), 'PRIVATE KEY');
}

async function importPrivateKey(pem: string): Promise<CryptoKey> {
  const der = Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
  return (await webcrypto.subtle.importKey('pkcs8', der, ALGORITHM, false, ['sign'])) as unknown as CryptoKey;
}

const randomSerial = () =>
  Buffer.from(webcrypto.getRandomValues(new Uint8Array(16)))
    .toString('hex')
    .replace(/^[89a-f]/, '1');

/** A certificate authority as plain values: its certificate and its private key (PKCS#8), both PEM. */
export interface CaMaterial {
  certificatePem: string;
  privateKeyPem: string;
}

/** A new self-signed frontend CA (10 years, CA:TRUE pathlen 0); the caller stores it (its key sealed). */
export async function createLocalCa(): Promise<CaMaterial> {
  const keys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as unknown as CryptoKeyPair;
  const now = Date.now();
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: 'CN=edgehub frontend CA',
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 10 * 365 * DAY),
    keys,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certificatePem: certificate.toString('pem'), privateKeyPem: await exportPrivateKey(keys.privateKey) };
}

/** Signs with the given CA (the service's own): a 90-day server certificate for the hostname and its share subdomains. */
export function localCertificateIssuer(material: CaMaterial): CertificateIssuer {
  return {
    name: 'local-ca',
    async issue({ hostname }) {
      const ca = { certificate: new x509.X509Certificate(material.certificatePem), key: await importPrivateKey(material.privateKeyPem) };
      const keys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as unknown as CryptoKeyPair;
      const now = Date.now();
      const notAfter = new Date(now + 90 * DAY);
      const certificate = await x509.X509CertificateGenerator.create({
        serialNumber: randomSerial(),
        subject: `CN=${hostname}`,
        issuer: ca.certificate.subject,
        notBefore: new Date(now - 60_000),
        notAfter,
        publicKey: keys.publicKey,
        signingKey: ca.key,
        signingAlgorithm: ALGORITHM,
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
          new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
          new x509.SubjectAlternativeNameExtension([
            { type: 'dns', value: hostname },
            { type: 'dns', value: `*.${hostname}` },
          ]),
          await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
          await x509.AuthorityKeyIdentifierExtension.create(ca.certificate),
        ],
      });
      return {
        certificatePem: certificate.toString('pem') + '\n' + ca.certificate.toString('pem'),
        privateKeyPem: await exportPrivateKey(keys.privateKey),
        notAfter,
        issuer: 'local-ca',
      };
    },
  };
}
