import * as asn1js from 'asn1js';
import { AttributeTypeAndValue, RelativeDistinguishedNames } from 'pkijs';

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

/** A distinguished name as read: its (attribute type OID, value) pairs in order, multi-valued RDNs flattened. */
export type NameEntries = { type: string; value: string }[];

/**
 * The entries of a Name that pkijs parsed. Every value must be one of the ASN.1 string types (asn1js decodes UTF8,
 * BMP and Universal strings as well as the 8-bit ones); anything else is refused with the reason.
 */
export function nameEntries(name: RelativeDistinguishedNames): NameEntries {
  return name.typesAndValues.map((atv) => {
    const value = atv.value as unknown;
    if (!(value instanceof asn1js.BaseStringBlock)) throw new Error(`the value of ${SHORT_NAMES[atv.type] ?? atv.type} is not a string`);
    return { type: atv.type, value: value.getValue() };
  });
}

function values(name: NameEntries, oid: string): string[] {
  return name.filter((atv) => atv.type === oid).map((atv) => atv.value);
}

/** CN, O and OU of a name (the first of each when repeated). */
export function subjectFields(name: NameEntries): SubjectFields & { all: Record<keyof SubjectFields, string[]> } {
  const all = {
    commonName: values(name, OID.commonName),
    organization: values(name, OID.organization),
    organizationalUnit: values(name, OID.organizationalUnit),
  };
  return { commonName: all.commonName[0], organization: all.organization[0], organizationalUnit: all.organizationalUnit[0], all };
}

/** `CN=a, O=b` in the order of the name. */
export function nameToString(name: NameEntries): string {
  return name.map((atv) => `${SHORT_NAMES[atv.type] ?? atv.type}=${atv.value}`).join(', ');
}

/**
 * A name from (attribute type OID, value) pairs, values as UTF8String, one RDN each (`O=edgehub, CN=...`). pkijs
 * would encode a name built from its fields as one multi-valued RDN (`O=edgehub + CN=...`), so the name is parsed
 * from the encoding wanted: pkijs keeps a parsed name's bytes.
 */
export function buildName(parts: [oid: string, value: string][]): RelativeDistinguishedNames {
  const rdns = parts.map(
    ([type, value]) => new asn1js.Set({ value: [new AttributeTypeAndValue({ type, value: new asn1js.Utf8String({ value }) }).toSchema()] }),
  );
  return RelativeDistinguishedNames.fromBER(new asn1js.Sequence({ value: rdns }).toBER());
}
