import { AsnConvert } from '@peculiar/asn1-schema';
import { AttributeTypeAndValue, AttributeValue, Name, RelativeDistinguishedName } from '@peculiar/asn1-x509';

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

function values(name: Name, oid: string): string[] {
  return name.flatMap((rdn) => rdn.filter((atv) => atv.type === oid).map((atv) => atv.value.toString()));
}

/** CN, O and OU of a name (the first of each when repeated). */
export function subjectFields(name: Name): SubjectFields & { all: Record<keyof SubjectFields, string[]> } {
  const all = {
    commonName: values(name, OID.commonName),
    organization: values(name, OID.organization),
    organizationalUnit: values(name, OID.organizationalUnit),
  };
  return { commonName: all.commonName[0], organization: all.organization[0], organizationalUnit: all.organizationalUnit[0], all };
}

/** `CN=a, O=b` in the order of the name. */
export function nameToString(name: Name): string {
  return name
    .flatMap((rdn) => rdn.map((atv) => `${SHORT_NAMES[atv.type] ?? atv.type}=${atv.value.toString()}`))
    .join(', ');
}

/** A name from (short name, value) pairs, values as UTF8String. */
export function buildName(parts: [oid: string, value: string][]): Name {
  return new Name(parts.map(([type, value]) => new RelativeDistinguishedName([new AttributeTypeAndValue({ type, value: new AttributeValue({ utf8String: value }) })])));
}

export const nameDer = (name: Name) => Buffer.from(AsnConvert.serialize(name));
