import test from 'ava';
import * as asn1js from 'asn1js';
import { derToPem, pemToDer } from '../../../shared/pki/der.js';
import { makeCsr } from '../../helpers/pki.js';
import { type HubFixture, useStack } from '../../helpers/stack.js';
import { assertRefused } from '../../helpers/refusals.js';

/**
 * CSRs are parsed strictly. The hand-written reader accepted non-minimal lengths and ignored
 * trailing bytes; altered outside the signed part, such a CSR still verified and was signed. Now each is a 400.
 */

const stack = useStack(test);
let hub: HubFixture;
test.before(async () => {
  hub = await stack.hub();
});

/** The outer SEQUENCE's parts: header and content (an EC CSR is 128..255 bytes long: header 30 81 LL). */
function outer(der: Buffer): { content: Buffer } {
  if (der[0] !== 0x30 || der[1] !== 0x81 || der[2] !== der.length - 3) throw new Error(`unexpected CSR layout ${der.subarray(0, 3).toString('hex')}`);
  return { content: der.subarray(3) };
}

const variants: [string, (der: Buffer) => Buffer, RegExp][] = [
  ['trailing bytes after the CSR', (der) => Buffer.concat([der, Buffer.from([0x00, 0x00])]), /trailing data/],
  ['a length with a leading zero octet', (der) => Buffer.concat([Buffer.from([0x30, 0x82, 0x00, der.length - 3]), outer(der).content]), /leading zero/],
  [
    'a short length in long form',
    (der) => {
      // the signature BIT STRING (last element, shorter than 128 bytes) with its length written as 81 LL
      const { content } = outer(der);
      const start = [...content.keys()].reverse().find((i) => content[i] === 0x03 && i + 2 + content[i + 1] === content.length)!;
      const body = Buffer.concat([content.subarray(0, start), Buffer.from([0x03, 0x81]), content.subarray(start + 1)]);
      return Buffer.concat([Buffer.from([0x30, 0x81, body.length]), body]);
    },
    /long form for a short length/,
  ],
  ['an indefinite length (BER)', (der) => Buffer.concat([Buffer.from([0x30, 0x80]), outer(der).content, Buffer.from([0x00, 0x00])]), /indefinite length/],
];

for (const [what, alter, reason] of variants) {
  test(`a CSR with ${what} is a 400 and nothing is issued`, async (t) => {
    const pem = await makeCsr(`/CN=strict-${what.length}`);
    const der = pemToDer(pem, ['CERTIFICATE REQUEST'])!;
    const name = `strict-${what.replace(/\W+/g, '-')}`;
    const altered = derToPem(alter(der), 'CERTIFICATE REQUEST');
    const r = await hub.call('POST', `${hub.h}/client-certificates`, { body: { name, value: altered } });
    assertRefused(t, r, 400, 'invalid_request', 'EH_CSR_INVALID');
    t.regex(r.json.message, reason, 'names the DER defect (the point of this test)');
    const list = await hub.call('GET', `${hub.h}/client-certificates`);
    t.false(
      list.json.content.some((c: { name: string }) => c.name === name),
      'nothing written',
    );
  });
}

test('an unaltered CSR is accepted; one that is DER but not PKCS#10 is a 400 from the schema', async (t) => {
  const ok = await hub.call('POST', `${hub.h}/client-certificates`, { body: { name: 'strict-ok', value: await makeCsr('/CN=strict-ok') } });
  t.is(ok.status, 201, ok.text);
  const notCsr = derToPem(Buffer.from([0x30, 0x03, 0x02, 0x01, 0x00]), 'CERTIFICATE REQUEST');
  const r = await hub.call('POST', `${hub.h}/client-certificates`, { body: { name: 'strict-not', value: notCsr } });
  assertRefused(t, r, 400, 'invalid_request', 'EH_CSR_INVALID');
});

/** A SEQUENCE around raw element bytes, written by hand (the alterations below are what no ASN.1 library writes). */
function encodeSequence(...parts: Buffer[]): Buffer {
  const content = Buffer.concat(parts);
  const n = content.length;
  const length = n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : [0x82, n >> 8, n & 0xff];
  return Buffer.concat([Buffer.from([0x30, ...length]), content]);
}

/** The bytes of a parsed element, as they were. */
const raw = (element: asn1js.AsnType) => Buffer.from((element as asn1js.BaseBlock).valueBeforeDecodeView);

/** The CSR rebuilt with another signatureAlgorithm element (outside the signed part, so the signature still verifies). */
function withSignatureAlgorithm(der: Buffer, algorithm: (oid: Buffer) => Buffer): Buffer {
  const [info, sigAlg, signature] = (asn1js.fromBER(new Uint8Array(der)).result as asn1js.Sequence).valueBlock.value;
  const [oid] = (sigAlg as asn1js.Sequence).valueBlock.value;
  return encodeSequence(raw(info), algorithm(raw(oid)), raw(signature));
}

test('a CSR is parsed against PKCS#10: extra fields and malformed universal types outside the signed part are a 400', async (t) => {
  const der = pemToDer(await makeCsr('/CN=strict-structure'), ['CERTIFICATE REQUEST'])!;
  const cases: [string, Buffer, RegExp][] = [
    [
      'strict-extra-field',
      withSignatureAlgorithm(der, (oid) => encodeSequence(oid, Buffer.from([0x05, 0x00]), Buffer.from([0x05, 0x00]))),
      /^CSR is not a valid PKCS#10 certification request \(it has elements the PKCS#10 schema does not have\)/,
    ],
    [
      'strict-primitive-sequence',
      withSignatureAlgorithm(der, (oid) => encodeSequence(oid, Buffer.from([0x10, 0x01, 0x00]))),
      /^CSR is not a DER-encoded PKCS#10 certification request \(a SEQUENCE or SET in primitive form\)/,
    ],
    [
      'strict-integer',
      withSignatureAlgorithm(der, (oid) => encodeSequence(oid, Buffer.from([0x02, 0x02, 0x00, 0x01]))),
      /INTEGER that is not minimally encoded/,
    ],
    ['strict-oid', withSignatureAlgorithm(der, (oid) => encodeSequence(oid, Buffer.from([0x06, 0x02, 0x2a, 0x86]))), /malformed OBJECT IDENTIFIER/],
  ];
  for (const [name, altered, reason] of cases) {
    const r = await hub.call('POST', `${hub.h}/client-certificates`, { body: { name, value: derToPem(altered, 'CERTIFICATE REQUEST') } });
    assertRefused(t, r, 400, 'invalid_request', 'EH_CSR_INVALID');
    t.regex(r.json.message, reason, `${name}: names the defect (the point of this test)`);
  }
  const list = await hub.call('GET', `${hub.h}/client-certificates`);
  t.false(
    list.json.content.some((c: { name: string }) => c.name.startsWith('strict-') && cases.some(([n]) => n === c.name)),
    'nothing written',
  );
});
