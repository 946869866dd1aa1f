/**
 * What the edge's HTTP and TLS listeners do with a connection before their server sees a byte of it:
 *
 * - From a trusted proxy or load balancer (HUB_EDGE_TRUSTED_PROXIES): a PROXY protocol header the connection begins
 *   with (edge/front/proxyProtocol.ts, versions 1 and 2) is read, and its client address becomes the connection's
 *   `remoteAddress` (so X-Forwarded-For, logs, share policies and the HTTP/2 penalties see the client, not the load
 *   balancer). A connection that begins otherwise is the peer's own (an HTTP proxy, whose X-Forwarded-For share
 *   policies believe: edge/policy/clientAddress.ts); a malformed header, or none complete within HEAD_TIMEOUT_MS, is
 *   refused. From any other peer nothing is read here: a PROXY header it sends is bytes of its request, refused by the
 *   server behind (400 on HTTP, no TLS handshake).
 * - On the TLS listener, from an address penalised for HTTP/2 abuse (edge/front/http2.ts): its ClientHello is read
 *   (edge/front/clientHello.ts, one TLS record at most) and a connection that offers `h2` is refused before any TLS work;
 *   one that does not (an HTTP/1.1 client, an agent with its own ALPN protocol) goes on. So a penalty keeps an
 *   address from what it did wrong, HTTP/2, and from nothing else: an agent on the same address (behind the same
 *   NAT) is admitted by its certificate as always. The work per refused connection is bounded: at most one record
 *   read, for at most HEAD_TIMEOUT_MS, then the connection is held unread until the penalty ends (see hold()), so a
 *   client reconnecting in a loop costs an accept per penalty rather than hundreds a second.
 *
 * Everything else is handed on untouched, without a read: the common case costs nothing.
 */
import type net from 'node:net';
import ipaddr from 'ipaddr.js';
import { logger } from '../../shared/logger.js';
import { helloAlpn, MAX_HELLO_BYTES } from './clientHello.js';
import { MAX_V2_LENGTH, parseProxyHeader } from './proxyProtocol.js';

/** How long a connection may take to send what is read here (a PROXY header, a ClientHello). */
const HEAD_TIMEOUT_MS = 5_000;

interface FrontOptions {
  /** CIDRs of the proxies and load balancers whose connections may begin with a PROXY header. */
  trustedProxies: readonly string[];
  /** TLS listener only: how long an address stays penalised for HTTP/2 abuse (ms; 0: not penalised). */
  penaltyLeft?: (address: string) => number;
  /** Which listener, for logs. */
  name: string;
}

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Whether `address` is in one of `ranges` (an IPv4-mapped IPv6 address counts as its IPv4 one). */
function within(ranges: Range[], address: string | undefined): boolean {
  if (!address || !ranges.length) return false;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return false;
  }
  return ranges.some((range) => range[0].kind() === parsed.kind() && parsed.match(range));
}

/** Sets what `socket.remoteAddress` and `remotePort` say (the client a PROXY header named). */
function setPeer(socket: net.Socket, address: string, port: number | undefined): void {
  Object.defineProperty(socket, 'remoteAddress', { value: address, configurable: true });
  if (port !== undefined) Object.defineProperty(socket, 'remotePort', { value: port, configurable: true });
}

/**
 * A TLS connection made over `raw` (tls.Server wraps the raw socket): the client address a PROXY header gave the raw
 * socket is the TLS socket's too.
 */
export function adoptPeer(tlsSocket: net.Socket): void {
  const raw = (tlsSocket as unknown as { _parent?: net.Socket })._parent;
  if (!raw || !Object.hasOwn(raw, 'remoteAddress')) return;
  setPeer(tlsSocket, raw.remoteAddress!, Object.hasOwn(raw, 'remotePort') ? raw.remotePort : undefined);
}

/**
 * Puts the admission above in front of `server`'s own handling of new connections (its 'connection' listeners,
 * registered by node:http or node:tls when it was made), which run once a connection is admitted. The server keeps
 * listening and closing as before.
 */
export function interpose(server: net.Server, o: FrontOptions): void {
  const ranges: Range[] = o.trustedProxies.map((cidr) => ipaddr.parseCIDR(cidr) as Range);
  const handlers = server.listeners('connection') as ((socket: net.Socket) => void)[];
  server.removeAllListeners('connection');
  const deliver = (socket: net.Socket) => {
    for (const handler of handlers) handler.call(server, socket);
  };
  server.on('connection', (socket: net.Socket) => {
    const proxied = within(ranges, socket.remoteAddress);
    if (!proxied && !o.penaltyLeft?.(socket.remoteAddress ?? '')) return deliver(socket);
    admit(socket, proxied, o, deliver);
  });
}

/** Refused connections held per address, and in all, before the next are reset at once. */
const HOLD_PER_ADDRESS = 8;
const HOLD_TOTAL = 1024;
const held = new Map<string, number>();
let heldTotal = 0;

/**
 * Refuses a connection of a penalised address: held open, unread, until the penalty ends, then reset. A client that
 * reconnects as soon as it is refused (as a flood does) is slowed to one attempt per penalty instead of hundreds a
 * second, each of which costs an accept and a read; a held connection costs a descriptor and no work. Past
 * HOLD_PER_ADDRESS held for the address (or HOLD_TOTAL in all) a refused connection is reset at once.
 */
function hold(socket: net.Socket, address: string, ms: number): void {
  socket.on('error', () => undefined);
  const mine = held.get(address) ?? 0;
  if (ms <= 0 || mine >= HOLD_PER_ADDRESS || heldTotal >= HOLD_TOTAL) return void socket.resetAndDestroy();
  held.set(address, mine + 1);
  heldTotal++;
  socket.pause();
  const timer = setTimeout(() => socket.resetAndDestroy(), ms);
  socket.once('close', () => {
    clearTimeout(timer);
    heldTotal--;
    const n = (held.get(address) ?? 1) - 1;
    if (n > 0) held.set(address, n);
    else held.delete(address);
  });
}

/** Reads what must be read of a connection (its PROXY header, its ClientHello), then hands it on or refuses it. */
function admit(socket: net.Socket, proxied: boolean, o: FrontOptions, deliver: (socket: net.Socket) => void): void {
  const peer = socket.remoteAddress;
  let stage: 'proxy' | 'hello' = proxied ? 'proxy' : 'hello';
  let head: Buffer = Buffer.alloc(0);
  let done = false;
  const finish = () => {
    done = true;
    clearTimeout(timer);
    socket.off('data', onData);
    socket.off('end', onEnd);
    socket.off('error', onError);
  };
  const refuse = (why: string) => {
    if (done) return;
    finish();
    if (stage === 'proxy') logger.info({ listener: o.name, peer, why }, 'edge: connection from a trusted proxy refused (PROXY protocol)');
    socket.on('error', () => undefined);
    socket.resetAndDestroy();
  };
  const onEnd = () => refuse('closed before its header');
  const onError = () => refuse('connection error');
  const timer = setTimeout(() => refuse(stage === 'proxy' ? 'no PROXY header in time' : 'no ClientHello in time'), HEAD_TIMEOUT_MS);
  const step = () => {
    if (stage === 'proxy') {
      const r = parseProxyHeader(head);
      if ('more' in r) return head.length > 16 + MAX_V2_LENGTH ? refuse('a PROXY header too long') : undefined;
      if ('refused' in r) return refuse(r.refused);
      if ('header' in r) {
        if (r.header.address) setPeer(socket, r.header.address, r.header.port);
        head = head.subarray(r.header.length);
      }
      if (!o.penaltyLeft?.(socket.remoteAddress ?? '')) return pass();
      stage = 'hello';
      if (!head.length) return;
    }
    const hello = helloAlpn(head);
    if ('more' in hello) return head.length >= MAX_HELLO_BYTES ? refuse('a ClientHello too long') : undefined;
    // penalised for HTTP/2: a connection that may speak it is refused; one that cannot goes on
    if ('unknown' in hello || hello.alpn.includes('h2')) {
      finish();
      return hold(socket, socket.remoteAddress ?? '', o.penaltyLeft?.(socket.remoteAddress ?? '') ?? 0);
    }
    pass();
  };
  const pass = () => {
    finish();
    // the bytes after the header go back in front of the socket's data, for the server behind (node:tls and
    // node:http both read what a socket holds before its handle's next bytes)
    socket.pause();
    if (head.length) socket.unshift(head);
    deliver(socket);
    process.nextTick(() => socket.resume());
  };
  const onData = (chunk: Buffer) => {
    head = head.length ? Buffer.concat([head, chunk]) : chunk;
    step();
  };
  socket.on('data', onData);
  socket.once('end', onEnd);
  socket.on('error', onError);
}
