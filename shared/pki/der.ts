/**
 * The strict DER check in front of the ASN.1 libraries (asn1js accepts BER and trailing bytes): one element, minimal
 * definite lengths, universal types as DER encodes them. Plus PEM framing.
 */

/** One TLV element. */
export interface DerElement {
  tag: number;
  /** The whole element: tag, length and content. */
  raw: Buffer;
  content: Buffer;
}

export function readElement(buf: Buffer, offset = 0): DerElement {
  if (offset + 2 > buf.length) throw new Error('truncated DER');
  const tag = buf[offset];
  let length = buf[offset + 1];
  let header = 2;
  if (length === 0x80) throw new Error('indefinite length (BER, not DER)');
  if (length & 0x80) {
    const octets = length & 0x7f;
    if (octets > 4 || offset + 2 + octets > buf.length) throw new Error('unsupported DER length');
    if (buf[offset + 2] === 0) throw new Error('length with a leading zero octet (not DER)');
    length = 0;
    for (let i = 0; i < octets; i++) length = length * 256 + buf[offset + 2 + i];
    if (length < 0x80) throw new Error('long form for a short length (not DER)');
    header += octets;
  }
  const end = offset + header + length;
  if (end > buf.length) throw new Error('truncated DER');
  return { tag, raw: buf.subarray(offset, end), content: buf.subarray(offset + header, end) };
}

/** True when an OBJECT IDENTIFIER's content is well formed: subidentifiers minimal (no leading 0x80), the last one ended. */
function isOidContent(c: Buffer): boolean {
  if (c.length === 0 || c[c.length - 1] & 0x80) return false;
  for (let i = 0; i < c.length; i++) if (c[i] === 0x80 && (i === 0 || !(c[i - 1] & 0x80))) return false;
  return true;
}

/**
 * The encoding rules of the universal types, as DER has them: SEQUENCE and SET constructed, every other universal
 * type primitive; BOOLEAN one octet 00 or FF; INTEGER and ENUMERATED at least one octet and minimal; BIT STRING an
 * unused-bits octet 0-7 (0 when empty); NULL empty; OBJECT IDENTIFIER well formed. Elements of other classes
 * (context-specific, ...) are the schema's business.
 */
function assertUniversal(tag: number, content: Buffer): void {
  if (tag & 0xc0) return;
  const number = tag & 0x1f;
  const constructed = (tag & 0x20) !== 0;
  if (number === 0) throw new Error('end-of-contents octets (BER, not DER)');
  if (number === 0x10 || number === 0x11) {
    if (!constructed) throw new Error('a SEQUENCE or SET in primitive form');
    return;
  }
  if (constructed) throw new Error('constructed encoding of a primitive type (BER, not DER)');
  const c = content;
  switch (number) {
    case 0x01:
      if (c.length !== 1 || (c[0] !== 0x00 && c[0] !== 0xff)) throw new Error('a BOOLEAN that is not one octet 00 or FF');
      return;
    case 0x02:
    case 0x0a:
      if (c.length === 0) throw new Error('an empty INTEGER');
      if (c.length > 1 && ((c[0] === 0x00 && !(c[1] & 0x80)) || (c[0] === 0xff && c[1] & 0x80))) throw new Error('an INTEGER that is not minimally encoded');
      return;
    case 0x03:
      if (c.length === 0 || c[0] > 7 || (c.length === 1 && c[0] !== 0)) throw new Error('a BIT STRING with an invalid unused-bits octet');
      return;
    case 0x05:
      if (c.length !== 0) throw new Error('a NULL with content');
      return;
    case 0x06:
      if (!isOidContent(c)) throw new Error('a malformed OBJECT IDENTIFIER');
      return;
  }
}

/**
 * Checks that `der` is exactly one DER element, at every level of its constructed elements: definite, minimal
 * lengths (readElement refuses the others), constructed contents filled exactly by their children, low tag numbers
 * only, universal types encoded as DER has them (assertUniversal), and no byte after the end. Throws with the reason.
 */
export function assertDer(der: Buffer): void {
  const walk = (buf: Buffer, depth: number): void => {
    if (depth > 32) throw new Error('nested too deeply');
    for (let offset = 0; offset < buf.length; ) {
      const element = readElement(buf, offset);
      if ((element.tag & 0x1f) === 0x1f) throw new Error('high tag number form not expected here');
      assertUniversal(element.tag, element.content);
      if (element.tag & 0x20) walk(element.content, depth + 1);
      offset += element.raw.length;
    }
  };
  const outer = readElement(der);
  if (outer.raw.length !== der.length) throw new Error(`${der.length - outer.raw.length} byte(s) of trailing data after the structure`);
  walk(der, 0);
}

/** Decodes a PEM block with the given label (e.g. CERTIFICATE REQUEST) to DER, or undefined when there is none. */
export function pemToDer(pem: string, labels: string[]): Buffer | undefined {
  for (const label of labels) {
    const match = new RegExp(`-----BEGIN ${label}-----([A-Za-z0-9+/=\\s]+)-----END ${label}-----`).exec(pem);
    if (match) return Buffer.from(match[1].replace(/\s+/g, ''), 'base64');
  }
  return undefined;
}

export function derToPem(der: Buffer | ArrayBuffer, label: string): string {
  const b64 = Buffer.from(der as ArrayBuffer).toString('base64');
  return `-----BEGIN ${label}-----\n${b64.replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END ${label}-----\n`;
}
