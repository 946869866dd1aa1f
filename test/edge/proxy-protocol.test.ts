/**
 * The PROXY protocol on the edge's listeners, from the load balancers HUB_EDGE_TRUSTED_PROXIES names (here an edge
 * that trusts 127.0.0.1, beside one that trusts nobody): version 1 on the HTTP listener and version 2 (IPv4 and IPv6)
 * on the TLS listener give the target the client's address in X-Forwarded-For; a trusted peer without a header is
 * served as itself (an HTTP proxy in front of the edge), one with a malformed header is refused before its request
 * reaches anything; a header from a peer that is not trusted is
 * refused (400 on HTTP, no TLS handshake) and its address goes nowhere. HTTP/2 penalties then fall on the client's
 * address: a client that floods PINGs behind the load balancer is refused HTTP/2, another client behind it is not.
 */
import net from 'node:net';
import tls from 'node:tls';
import test from 'ava';
import type { Edge } from '../../edge/server.js';
import { publicFrontendCertificate, routedShare, startBackend, startTestEdge, type Backend } from '../helpers/edge.js';
import { FRAME, frame } from '../helpers/h2.js';
import { rawConversation, rawExchange } from '../helpers/raw.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

const stack = useStack(test, { env: { HUB_EDGE_FLUSH_MS: '600000' } });
let trusting: Edge;
let trustless: Edge;
let hub: HubFixture;
let backend: Backend;
let host: string;
const seen: string[] = [];
stack.onStop(async () => {
  await trusting?.stop(1000);
  await trustless?.stop(1000);
  await backend?.close();
});

test.before(async () => {
  trusting = await startTestEdge({ trustedProxies: ['127.0.0.1/32', '::1/128'] });
  trustless = await startTestEdge();
  hub = await stack.hub({ name: 'proxied' });
  await publicFrontendCertificate(stack.databaseUrl);
  backend = await startBackend((req, res) => {
    seen.push(String(req.headers['x-forwarded-for']));
    res.end(`xff=${req.headers['x-forwarded-for']}`);
  });
  host = (await routedShare(trusting, hub, { target: backend.url })).host;
  await waitFor(async () => trustless.routes.lookup(host), { timeoutMs: 2000, what: 'the second edge routing the share' });
});

const v1 = (address: string, port = 51234) =>
  `PROXY ${address.includes(':') ? 'TCP6' : 'TCP4'} ${address} ${address.includes(':') ? '::1' : '127.0.0.1'} ${port} 443\r\n`;

/** A version 2 PROXY header (PROXY command, TCP) for an IPv4 or IPv6 client, with a TLV after the addresses. */
function v2(address: string, port = 51234): Buffer {
  const signature = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
  const six = address.includes(':');
  const bytes = (a: string) => (six ? ipv6Bytes(a) : Buffer.from(a.split('.').map(Number)));
  const ports = Buffer.alloc(4);
  ports.writeUInt16BE(port, 0);
  ports.writeUInt16BE(443, 2);
  const tlv = Buffer.from([0x04, 0x00, 0x02, 0xab, 0xcd]); // PP2_TYPE_NOOP, skipped
  const block = Buffer.concat([bytes(address), bytes(six ? '::1' : '127.0.0.1'), ports, tlv]);
  const head = Buffer.from([0x21, six ? 0x21 : 0x11, 0, 0]);
  head.writeUInt16BE(block.length, 2);
  return Buffer.concat([signature, head, block]);
}

function ipv6Bytes(address: string): Buffer {
  const [left, right = ''] = address.split('::');
  const l = left ? left.split(':') : [];
  const r = right ? right.split(':') : [];
  const groups = [...l, ...Array(8 - l.length - r.length).fill('0'), ...r];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(Number.parseInt(g, 16), i * 2));
  return out;
}

/** An HTTP/1.1 request over TLS to `port`, after `prefix` written in clear; the answer text ('' when refused). */
function overTls(port: number, prefix: Buffer | string, alpn = 'http/1.1'): Promise<string> {
  return new Promise((resolve) => {
    const raw = net.connect({ host: '127.0.0.1', port }, () => {
      raw.write(prefix);
      const socket = tls.connect({ socket: raw, servername: host, ALPNProtocols: [alpn], rejectUnauthorized: false }, () => {
        socket.write(`GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      });
      let text = '';
      socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
      socket.on('error', () => resolve(text));
      socket.on('close', () => resolve(text));
    });
    raw.on('error', () => resolve(''));
  });
}

const plainRequest = () => `GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;

test.serial("from a trusted load balancer: version 1 on HTTP, version 2 on TLS; the target sees the client's address", async (t) => {
  const one = await rawExchange(trusting.httpPort!, v1('203.0.113.7') + plainRequest());
  t.regex(one, /^HTTP\/1\.1 200 /);
  t.regex(one, /xff=203\.0\.113\.7$/);
  const six = await rawExchange(trusting.httpPort!, v1('2001:db8::5') + plainRequest());
  t.regex(six, /xff=2001:db8::5$/);
  const overV2 = await overTls(trusting.httpsPort!, v2('198.51.100.20'));
  t.regex(overV2, /^HTTP\/1\.1 200 /);
  t.regex(overV2, /xff=198\.51\.100\.20$/);
  const overV2six = await overTls(trusting.httpsPort!, v2('2001:db8::77'));
  t.regex(overV2six, /xff=2001:db8::77$/);
  // a load balancer's own health check (version 2 LOCAL) stands for itself
  const local = Buffer.concat([v2('192.0.2.1').subarray(0, 12), Buffer.from([0x20, 0x00, 0x00, 0x00])]);
  const health = await rawExchange(trusting.httpPort!, Buffer.concat([local, Buffer.from(plainRequest())]));
  t.regex(health, /xff=127\.0\.0\.1$/);
});

test.serial('from a trusted peer without a header: served as the peer itself (an HTTP proxy), on HTTP and TLS', async (t) => {
  t.regex(await rawExchange(trusting.httpPort!, plainRequest()), /^HTTP\/1\.1 200 [^]*xff=127\.0\.0\.1$/);
  t.regex(await overTls(trusting.httpsPort!, ''), /^HTTP\/1\.1 200 [^]*xff=127\.0\.0\.1$/);
  // the chain it sends goes on to the target with the peer appended; a chain that is not addresses does not
  const withChain = (xff: string) => `GET / HTTP/1.1\r\nHost: ${host}\r\nX-Forwarded-For: ${xff}\r\nConnection: close\r\n\r\n`;
  t.regex(await rawExchange(trusting.httpPort!, withChain('203.0.113.5, 198.51.100.2')), /xff=203\.0\.113\.5, 198\.51\.100\.2, 127\.0\.0\.1$/);
  t.regex(await rawExchange(trusting.httpPort!, withChain('203.0.113.5, evil')), /xff=127\.0\.0\.1$/);
  // from a peer that is not trusted, a chain it sends is dropped: the target sees the peer only
  t.regex(await rawExchange(trustless.httpPort!, withChain('203.0.113.5')), /xff=127\.0\.0\.1$/);
});

test.serial('from a trusted load balancer with a malformed header: refused before anything is served', async (t) => {
  const before = seen.length;
  for (const bytes of [
    `PROXY TCP4 203.0.113.300 127.0.0.1 1 2\r\n${plainRequest()}`,
    `PROXY TCP4 203.0.113.7\r\n${plainRequest()}`,
    `PROXY ${'x'.repeat(200)}\r\n${plainRequest()}`,
  ]) {
    const { text, closedByPeer } = await rawConversation(trusting.httpPort!, bytes, { timeoutMs: 8000 });
    t.is(text, '', `nothing answered to ${JSON.stringify(bytes.slice(0, 40))}`);
    t.true(closedByPeer);
  }
  t.is(await overTls(trusting.httpsPort!, Buffer.from('PROXY TCP4 203.0.113.7\r\n')), '', 'TLS after a malformed header: no handshake');
  t.is(seen.length, before, 'nothing reached the target');
});

test.serial('a PROXY header from a peer that is not trusted: 400 on HTTP, no TLS handshake; its address goes nowhere', async (t) => {
  const before = seen.length;
  const answer = await rawExchange(trustless.httpPort!, v1('203.0.113.9') + plainRequest());
  t.regex(answer, /^HTTP\/1\.1 400 /);
  t.is(await overTls(trustless.httpsPort!, v2('203.0.113.9')), '');
  t.is(seen.length, before, 'nothing reached the target');
  t.false(seen.some((x) => x.includes('203.0.113.9')));
  // the same edge serves the peer as itself
  t.regex(await rawExchange(trustless.httpPort!, plainRequest()), /xff=127\.0\.0\.1$/);
});

test.serial("HTTP/2 penalties fall on the client's address behind the load balancer, not on the load balancer's", async (t) => {
  const flooder = '198.51.100.66';
  const neighbour = '198.51.100.67';
  // the flooder's HTTP/2 connection sends PINGs until the edge sends it away
  await new Promise<void>((resolve) => {
    const raw = net.connect({ host: '127.0.0.1', port: trusting.httpsPort! }, () => {
      raw.write(v2(flooder));
      const socket = tls.connect({ socket: raw, servername: host, ALPNProtocols: ['h2'], rejectUnauthorized: false }, () => {
        const pings = Array.from({ length: 200 }, (_, i) => frame(FRAME.PING, 0, 0, Buffer.alloc(8, i)));
        socket.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), frame(FRAME.SETTINGS, 0, 0), ...pings]));
      });
      socket.on('error', () => undefined);
      // read (and drop) what comes: a socket never read never learns that the edge closed it
      socket.resume();
      socket.on('close', () => resolve());
    });
    raw.on('error', () => resolve());
  });
  // its new HTTP/2 connection is refused; its neighbour's (same load balancer, another client) is served
  t.is(await overTls(trusting.httpsPort!, v2(flooder), 'h2'), '', 'the flooder is refused HTTP/2');
  const neighbourAlpn = await new Promise<string | false>((resolve) => {
    const raw = net.connect({ host: '127.0.0.1', port: trusting.httpsPort! }, () => {
      raw.write(v2(neighbour));
      const socket = tls.connect({ socket: raw, servername: host, ALPNProtocols: ['h2'], rejectUnauthorized: false }, () => {
        resolve(socket.alpnProtocol || false);
        socket.destroy();
      });
      socket.on('error', () => resolve(''));
    });
    raw.on('error', () => resolve(''));
  });
  t.is(neighbourAlpn, 'h2', 'another client behind the same load balancer is served over HTTP/2');
  // and the flooder keeps HTTP/1.1
  t.regex(await overTls(trusting.httpsPort!, v2(flooder)), new RegExp(`xff=${flooder.replace(/\./g, '\\.')}$`));
});
