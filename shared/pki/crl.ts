import { sign } from 'node:crypto';
import * as asn1js from 'asn1js';
import { CertificateRevocationList, Extension, Extensions, RevokedCertificate } from 'pkijs';
import { authorityKeyIdentifierOf, ECDSA_WITH_SHA256, Encoded, issuerNameOf, type Signer, time } from './certificates.js';

/**
 * Certificate revocation lists (RFC 5280 section 5) from pkijs's CRL schema, signed with node:crypto like the
 * certificates (ECDSA P-256, SHA-256): version 2, the CA's name as issuer, thisUpdate and nextUpdate, one entry per
 * revoked serial with its date and reason code (none for `unspecified`, as RFC 5280 5.3.1 asks), and the CRL
 * extensions authorityKeyIdentifier and cRLNumber.
 */

/** The reasons the API accepts, by their RFC 5280 names, with their CRLReason codes. */
export const REVOCATION_REASONS = {
  unspecified: 0,
  keyCompromise: 1,
  affiliationChanged: 3,
  superseded: 4,
  cessationOfOperation: 5,
} as const;

export type RevocationReason = keyof typeof REVOCATION_REASONS;

interface RevokedEntry {
  /** The serial number as hex (its INTEGER content octets). */
  serialNumber: string;
  revokedAt: Date;
  reasonCode: number;
}

interface CrlRequest {
  issuer: Signer;
  crlNumber: number;
  thisUpdate: Date;
  nextUpdate: Date;
  revoked: RevokedEntry[];
}

const OID = { cRLNumber: '2.5.29.20', reasonCode: '2.5.29.21' };

/** An INTEGER from its content octets in hex (a serial as the service stores it), kept positive. */
function integerOfHex(hex: string): asn1js.Integer {
  let bytes = Buffer.from(hex.length % 2 ? `0${hex}` : hex, 'hex');
  if (bytes.length === 0 || bytes[0] & 0x80) bytes = Buffer.concat([Buffer.of(0), bytes]);
  return new asn1js.Integer({ valueHex: new Uint8Array(bytes) });
}

function entry(r: RevokedEntry): RevokedCertificate {
  const extensions =
    r.reasonCode === 0
      ? undefined
      : new Extensions({
          extensions: [new Extension({ extnID: OID.reasonCode, critical: false, extnValue: new asn1js.Enumerated({ value: r.reasonCode }).toBER() })],
        });
  return new RevokedCertificate({
    userCertificate: integerOfHex(r.serialNumber),
    revocationDate: time(r.revokedAt),
    ...(extensions ? { crlEntryExtensions: extensions } : {}),
  });
}

/** A signed CRL's DER. */
export function buildCrl(req: CrlRequest): Buffer {
  const crl = new CertificateRevocationList({
    version: 1,
    signature: ECDSA_WITH_SHA256,
    issuer: issuerNameOf(req.issuer),
    thisUpdate: time(req.thisUpdate),
    nextUpdate: time(req.nextUpdate),
    crlExtensions: new Extensions({
      extensions: [
        authorityKeyIdentifierOf(req.issuer),
        new Extension({ extnID: OID.cRLNumber, critical: false, extnValue: new asn1js.Integer({ value: req.crlNumber }).toBER() }),
      ],
    }),
  });
  if (req.revoked.length) crl.revokedCertificates = req.revoked.map(entry);
  // encodeTBS is pkijs's own TBSCertList encoder (protected in its types)
  const tbs = Buffer.from((crl as unknown as { encodeTBS(): asn1js.Sequence }).encodeTBS().toBER());
  const signature = sign('sha256', tbs, req.issuer.privateKey);
  return Buffer.from(
    new asn1js.Sequence({
      value: [
        new Encoded({ data: tbs }) as unknown as asn1js.BaseBlock,
        ECDSA_WITH_SHA256.toSchema(),
        new asn1js.BitString({ valueHex: new Uint8Array(signature) }),
      ],
    }).toBER(),
  );
}
