/**
 * A P-256 key and a PKCS#10 certificate signing request made with node:crypto alone. The request is a handful of
 * DER elements (RFC 2986): the subject as one attribute per RDN, the key's SubjectPublicKeyInfo as node:crypto
 * exports it, no attributes, signed ecdsa-with-SHA256.
 */
import { generateKeyPairSync, sign } from 'node:crypto';

/**
 * One DER element: tag, definite length, content.
 * @param {number} tag
 * @param {Buffer} content
 * @returns {Buffer}
 */
function der(tag, content) {
  const n = content.length;
  /** @type {number[]} */
  let length;
  if (n < 0x80) length = [n];
  else {
    const bytes = [];
    for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff);
    length = [0x80 | bytes.length, ...bytes];
  }
  return Buffer.concat([Buffer.from([tag, ...length]), content]);
}

/** @param {Buffer[]} items */
const sequence = (...items) => der(0x30, Buffer.concat(items));
/** @param {Buffer[]} items */
const set = (...items) => der(0x31, Buffer.concat(items));

/**
 * An OBJECT IDENTIFIER from its dotted form.
 * @param {string} dotted
 */
function oid(dotted) {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const bytes = [40 * a + b];
  for (const arc of rest) {
    const chunk = [arc & 0x7f];
    for (let v = arc >>> 7; v > 0; v >>>= 7) chunk.unshift(0x80 | (v & 0x7f));
    bytes.push(...chunk);
  }
  return der(0x06, Buffer.from(bytes));
}

const ATTRIBUTE = { CN: '2.5.4.3', O: '2.5.4.10', OU: '2.5.4.11' };
const ECDSA_WITH_SHA256 = '1.2.840.10045.4.3.2';

/**
 * @param {string} label
 * @param {Buffer} bytes
 */
const pemOf = (label, bytes) =>
  `-----BEGIN ${label}-----\n${bytes
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '')}\n-----END ${label}-----\n`;

/**
 * A fresh P-256 key and a CSR whose subject is CN, then O and OU when given (UTF8String values).
 * @param {{ cn: string; o?: string; ou?: string }} subject
 * @returns {{ keyPem: string; csrPem: string }}
 */
export function keyAndCsr(subject) {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const rdns = /** @type {[keyof typeof ATTRIBUTE, string | undefined][]} */ ([
    ['CN', subject.cn],
    ['O', subject.o],
    ['OU', subject.ou],
  ])
    .filter(([, value]) => value)
    .map(([type, value]) => set(sequence(oid(ATTRIBUTE[type]), der(0x0c, Buffer.from(String(value), 'utf8')))));
  const info = sequence(
    der(0x02, Buffer.from([0])), // version 0
    sequence(...rdns),
    /** @type {Buffer} */ (publicKey.export({ type: 'spki', format: 'der' })),
    Buffer.from([0xa0, 0x00]), // attributes: none
  );
  const signature = sign('sha256', info, privateKey); // DER ECDSA-Sig-Value
  const csr = sequence(info, sequence(oid(ECDSA_WITH_SHA256)), der(0x03, Buffer.concat([Buffer.from([0]), signature])));
  return { keyPem: String(privateKey.export({ type: 'pkcs8', format: 'pem' })), csrPem: pemOf('CERTIFICATE REQUEST', csr) };
}
