/**
 * The ALPN protocols a TLS ClientHello offers, read from the first bytes of a connection before any TLS work: what
 * the edge looks at to refuse, cheaply, a connection that could only repeat an abuse its address was penalised for
 * (edge/front/front.ts). Only the first TLS record is read (at most 5 + 16,384 bytes); a ClientHello that does not fit in
 * it, or bytes that are not a ClientHello, say nothing (`unknown`).
 */

/** Bytes of the first TLS record at most: its header and the largest plaintext record. */
export const MAX_HELLO_BYTES = 5 + 16_384;

type HelloParse = { alpn: string[] } | { more: true } | { unknown: string };

const ALPN_EXTENSION = 0x0010;

export function helloAlpn(head: Buffer): HelloParse {
  if (head.length < 5) return head.length && head[0] !== 0x16 ? { unknown: 'not a TLS handshake' } : { more: true };
  if (head[0] !== 0x16) return { unknown: 'not a TLS handshake' };
  const record = head.readUInt16BE(3);
  if (record > MAX_HELLO_BYTES - 5) return { unknown: 'a TLS record over 16 KiB' };
  if (head.length < 5 + record) return { more: true };
  const hello = head.subarray(5, 5 + record);
  if (hello.length < 4 || hello[0] !== 0x01) return { unknown: 'not a ClientHello' };
  const length = hello.readUIntBE(1, 3);
  if (4 + length > hello.length) return { unknown: 'a ClientHello spread over several records' };
  let at = 4 + 2 + 32; // version, random
  const skip = (sizeBytes: number): boolean => {
    if (at + sizeBytes > 4 + length) return false;
    const n = hello.readUIntBE(at, sizeBytes);
    at += sizeBytes + n;
    return at <= 4 + length;
  };
  // session id, cipher suites, compression methods
  if (!skip(1) || !skip(2) || !skip(1)) return { unknown: 'a malformed ClientHello' };
  if (at === 4 + length) return { alpn: [] };
  if (at + 2 > 4 + length) return { unknown: 'a malformed ClientHello' };
  const end = Math.min(4 + length, at + 2 + hello.readUInt16BE(at));
  at += 2;
  while (at + 4 <= end) {
    const type = hello.readUInt16BE(at);
    const size = hello.readUInt16BE(at + 2);
    at += 4;
    if (at + size > end) return { unknown: 'a malformed ClientHello' };
    if (type === ALPN_EXTENSION) {
      const names: string[] = [];
      let p = at + 2;
      const stop = Math.min(at + size, at + 2 + (size >= 2 ? hello.readUInt16BE(at) : 0));
      while (p < stop) {
        const n = hello[p];
        names.push(hello.subarray(p + 1, p + 1 + n).toString('latin1'));
        p += 1 + n;
      }
      return { alpn: names };
    }
    at += size;
  }
  return { alpn: [] };
}
