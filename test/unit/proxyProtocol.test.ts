import net, { type AddressInfo } from 'node:net';
import tls from 'node:tls';
import test from 'ava';
import { helloAlpn } from '../../edge/front/clientHello.js';
import { MAX_V2_LENGTH, parseProxyHeader } from '../../edge/front/proxyProtocol.js';

const SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);

/** A version 2 header: `command` 1 PROXY or 0 LOCAL, `family` byte, the address block as given. */
function v2(command: number, family: number, block: Buffer): Buffer {
  const head = Buffer.from([0x20 | command, family, 0, 0]);
  head.writeUInt16BE(block.length, 2);
  return Buffer.concat([SIGNATURE, head, block]);
}
const ports = (a: number, b: number) => {
  const p = Buffer.alloc(4);
  p.writeUInt16BE(a, 0);
  p.writeUInt16BE(b, 2);
  return p;
};

test('version 1: TCP4 and TCP6 give the source address and port; UNKNOWN gives none; what follows is left', (t) => {
  const line = 'PROXY TCP4 203.0.113.7 10.0.0.1 51234 443\r\n';
  t.deepEqual(parseProxyHeader(Buffer.from(`${line}GET / HTTP/1.1\r\n`)), { header: { length: line.length, address: '203.0.113.7', port: 51234 } });
  const six = 'PROXY TCP6 2001:db8::5 ::1 1 2\r\n';
  t.deepEqual(parseProxyHeader(Buffer.from(six)), { header: { length: six.length, address: '2001:db8::5', port: 1 } });
  t.deepEqual(parseProxyHeader(Buffer.from('PROXY UNKNOWN\r\n')), { header: { length: 15 } });
  t.deepEqual(parseProxyHeader(Buffer.from('PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n')), { header: { length: 35 } });
});

test('version 1: a line cut anywhere asks for more; every malformed one is refused', (t) => {
  const line = 'PROXY TCP4 203.0.113.7 10.0.0.1 51234 443\r\n';
  for (let n = 1; n < line.length; n++) t.deepEqual(parseProxyHeader(Buffer.from(line.slice(0, n))), { more: true }, `${n} bytes`);
  for (const bad of [
    'PROXY TCP4 203.0.113.300 10.0.0.1 1 2\r\n',
    'PROXY TCP4 2001:db8::1 10.0.0.1 1 2\r\n',
    'PROXY TCP6 203.0.113.7 ::1 1 2\r\n',
    'PROXY TCP4 203.0.113.7 10.0.0.1 65536 2\r\n',
    'PROXY TCP4 203.0.113.7 10.0.0.1 -1 2\r\n',
    'PROXY TCP4 203.0.113.7 10.0.0.1 01 2\r\n',
    'PROXY TCP4 203.0.113.7 10.0.0.1 1\r\n',
    'PROXY UDP4 203.0.113.7 10.0.0.1 1 2\r\n',
    'PROXY TCP4  203.0.113.7 10.0.0.1 1 2\r\n',
    `PROXY ${'x'.repeat(120)}\r\n`,
    `PROXY ${'x'.repeat(120)}`,
  ]) {
    t.true('refused' in parseProxyHeader(Buffer.from(bad)), bad);
  }
  // not a header at all: an HTTP request, a TLS ClientHello
  // no header at all: a request line or a TLS record is the peer's own connection
  t.deepEqual(parseProxyHeader(Buffer.from('GET / HTTP/1.1\r\n')), { none: true });
  t.deepEqual(parseProxyHeader(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00])), { none: true });
  t.deepEqual(parseProxyHeader(Buffer.from('P')), { more: true }, 'one byte that may still be PROXY');
});

test('version 2: IPv4 and IPv6 with TLVs after them; LOCAL and other families give no address; cut headers ask for more', (t) => {
  const four = v2(1, 0x11, Buffer.concat([Buffer.from([198, 51, 100, 20, 10, 0, 0, 1]), ports(40000, 443), Buffer.from([0x04, 0, 2, 1, 2])]));
  t.deepEqual(parseProxyHeader(Buffer.concat([four, Buffer.from('rest')])), { header: { length: four.length, address: '198.51.100.20', port: 40000 } });
  const a6 = Buffer.alloc(16);
  a6.writeUInt16BE(0x2001, 0);
  a6.writeUInt16BE(0x0db8, 2);
  a6.writeUInt16BE(0x77, 14);
  const six = v2(1, 0x21, Buffer.concat([a6, Buffer.alloc(16), ports(1, 2)]));
  t.deepEqual(parseProxyHeader(six), { header: { length: six.length, address: '2001:db8::77', port: 1 } });
  // UDP over IPv4 is still a client address
  t.is((parseProxyHeader(v2(1, 0x12, Buffer.concat([Buffer.from([192, 0, 2, 9, 10, 0, 0, 1]), ports(5, 6)]))) as any).header.address, '192.0.2.9');
  t.deepEqual(parseProxyHeader(v2(0, 0x00, Buffer.alloc(0))), { header: { length: 16 } });
  t.deepEqual(parseProxyHeader(v2(0, 0x11, Buffer.alloc(12))), { header: { length: 28 } }, 'LOCAL: the addresses are the balancer');
  t.deepEqual(parseProxyHeader(v2(1, 0x31, Buffer.alloc(216))), { header: { length: 232 } }, 'UNIX: no client address');
  for (let n = 1; n < four.length; n++) t.deepEqual(parseProxyHeader(four.subarray(0, n)), { more: true }, `${n} bytes`);
});

test('version 2: another version, another command, a block too short for its family or over the bound: refused', (t) => {
  const ok = v2(1, 0x11, Buffer.concat([Buffer.alloc(8), ports(1, 2)]));
  const version = Buffer.from(ok);
  version[12] = 0x11;
  t.true('refused' in parseProxyHeader(version));
  const command = Buffer.from(ok);
  command[12] = 0x22;
  t.true('refused' in parseProxyHeader(command));
  t.true('refused' in parseProxyHeader(v2(1, 0x11, Buffer.alloc(11))));
  t.true('refused' in parseProxyHeader(v2(1, 0x21, Buffer.alloc(35))));
  // refused from its length field alone, before the bytes come
  const huge = v2(1, 0x11, Buffer.alloc(12));
  huge.writeUInt16BE(MAX_V2_LENGTH + 1, 14);
  t.true('refused' in parseProxyHeader(huge.subarray(0, 16)));
});

/** The first bytes a node TLS client sends (its ClientHello), offering `alpn`. */
async function clientHello(alpn: string[] | undefined, servername = 'x.share.localhost'): Promise<Buffer> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const got = new Promise<Buffer>((resolve) =>
    server.once('connection', (s) => {
      let head = Buffer.alloc(0);
      s.on('data', (d: Buffer) => {
        head = Buffer.concat([head, d]);
        if (head.length >= 5 && head.length >= 5 + head.readUInt16BE(3)) {
          s.destroy();
          resolve(head);
        }
      });
    }),
  );
  const client = tls.connect({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, servername, ALPNProtocols: alpn, rejectUnauthorized: false });
  client.on('error', () => undefined);
  const head = await got;
  client.destroy();
  server.close();
  return head;
}

test('ClientHello: the ALPN protocols offered, none, a cut record, and bytes that are not one', async (t) => {
  const browser = await clientHello(['h2', 'http/1.1']);
  t.deepEqual(helloAlpn(browser), { alpn: ['h2', 'http/1.1'] });
  t.deepEqual(helloAlpn(await clientHello(['edgehub-agent/1'])), { alpn: ['edgehub-agent/1'] });
  t.deepEqual(helloAlpn(await clientHello(undefined)), { alpn: [] });
  for (const n of [1, 4, 5, 40, browser.length - 1]) t.deepEqual(helloAlpn(browser.subarray(0, n)), { more: true }, `${n} bytes`);
  t.true('unknown' in helloAlpn(Buffer.from('GET / HTTP/1.1\r\n')));
  t.true('unknown' in helloAlpn(Buffer.from('G')));
  // a handshake message longer than its record (spread over several): nothing said
  const spread = Buffer.from(browser);
  spread.writeUIntBE(spread.readUIntBE(6, 3) + 100, 6, 3);
  t.true('unknown' in helloAlpn(spread));
  // a record over 16 KiB is no ClientHello here
  const big = Buffer.from(browser);
  big.writeUInt16BE(16_385, 3);
  t.true('unknown' in helloAlpn(big));
});
