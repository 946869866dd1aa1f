import { AsnConvert } from '@peculiar/asn1-schema';
import { AttributeTypeAndValue, AttributeValue, Name, RelativeDistinguishedName } from '@peculiar/asn1-x509';
import { children, decodeOid, readElement } from './der.js';

export const OID = {
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  organizationalUnit: '2.5.4.11',
} as const;

const SHORT_NAMES: Record<string, string> = {
  '2.5.4.3': 'CN',
  '2.5.4.6': 'C',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '1.2.840.113549.1.9.1': 'emailAddress',
};

/** The subject fields a certificate request token can constrain. */
export interface SubjectFields {
  commonName?: string;
  organization?: string;
  organizationalUnit?: string;
}

/** A distinguished name as read: relative distinguished names, each a set of (attribute type OID, value). */
export type Rdns = { type: string; value: string }[][];

function decodeString(tag: number, content: Buffer): string {
  switch (tag) {
    case 0x0c: // UTF8String
      return content.toString('utf8');
    case 0x1e: // BMPString: UTF-16BE
      return Buffer.from(content).swap16().toString('utf16le');
    case 0x1c: {
      // UniversalString: UTF-32BE
      let out = '';
      for (let i = 0; i + 3 < content.length; i += 4) out += String.fromCodePoint(content.readUInt32BE(i));
      return out;
    }
    default: // PrintableString, IA5String, TeletexString, NumericString, VisibleString
      return content.toString('latin1');
  }
}

/**
 * Reads a DER Name. A plain walk over the TLVs: on the enrollment hot path the generic ASN.1 schema parser costs
 * more than the rest of CSR handling together.
 */
export function readName(der: Buffer): Rdns {
  const name = readElement(der);
  if (name.tag !== 0x30) throw new Error('a Name must be a SEQUENCE');
  return children(name).map((rdn) => {
    if (rdn.tag !== 0x31) throw new Error('a relative distinguished name must be a SET');
    return children(rdn).map((atv) => {
      const [type, value] = children(atv);
      if (atv.tag !== 0x30 || type?.tag !== 0x06 || !value) throw new Error('malformed AttributeTypeAndValue');
      return { type: decodeOid(type.content), value: decodeString(value.tag, value.content) };
    });
  });
}

function values(name: Rdns, oid: string): string[] {
  return name.flatMap((rdn) => rdn.filter((atv) => atv.type === oid).map((atv) => atv.value));
}

/** CN, O and OU of a name (the first of each when repeated). */
export function subjectFields(name: Rdns): SubjectFields & { all: Record<keyof SubjectFields, string[]> } {
  const all = {
    commonName: values(name, OID.commonName),
    organization: values(name, OID.organization),
    organizationalUnit: values(name, OID.organizationalUnit),
  };
  return { commonName: all.commonName[0], organization: all.organization[0], organizationalUnit: all.organizationalUnit[0], all };
}

/** `CN=a, O=b` in the order of the name. */
export function nameToString(name: Rdns): string {
  return name
    .flatMap((rdn) => rdn.map((atv) => `${SHORT_NAMES[atv.type] ?? atv.type}=${atv.value}`))
    .join(', ');
}

/** A name from (short name, value) pairs, values as UTF8String. */
export function buildName(parts: [oid: string, value: string][]): Name {
  return new Name(parts.map(([type, value]) => new RelativeDistinguishedName([new AttributeTypeAndValue({ type, value: new AttributeValue({ utf8String: value }) })])));
}

export const nameDer = (name: Name) => Buffer.from(AsnConvert.serialize(name));
