/**
 * The client address a policy judges (IP rules, rate limit): the connection's (after a PROXY protocol header from a
 * trusted load balancer, edge/front/front.ts). X-Forwarded-For counts only when the connection comes from a peer in
 * HUB_EDGE_TRUSTED_PROXIES: its entries are read from the right, each one taken while the hop that wrote it is
 * trusted too, so that a client cannot put an address of its choice in front of a trusted proxy's. The target gets
 * that chain with the peer appended (forwardedFor), and from anyone else the peer alone.
 */
import type { IncomingMessage } from 'node:http';
import { addressKey, CidrSet } from './cidr.js';

const plain = (address: string) => (address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address);

export class ClientAddress {
  private readonly trusted: CidrSet;

  constructor(trustedProxies: readonly string[]) {
    this.trusted = new CidrSet(trustedProxies);
  }

  of(req: IncomingMessage): string {
    let address = plain(req.socket?.remoteAddress ?? '');
    if (!this.trusted.size || !this.trusted.has(address)) return address;
    const forwarded = req.headers['x-forwarded-for'];
    if (!forwarded) return address;
    const hops = (Array.isArray(forwarded) ? forwarded.join(',') : forwarded).split(',');
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = plain(hops[i].trim());
      if (!addressKey(hop)) return address; // not an address: the last trusted hop's word stands
      address = hop;
      if (!this.trusted.has(hop)) return hop;
    }
    return address;
  }

  /**
   * The X-Forwarded-For the target gets: the peer's address, after the chain a trusted proxy sent (its entries are
   * the proxy's word, passed on as it said them, when every one is an address); from anyone else only the peer.
   */
  forwardedFor(req: IncomingMessage): string {
    const peer = plain(req.socket?.remoteAddress ?? '');
    if (!this.trusted.size || !this.trusted.has(peer)) return peer;
    const forwarded = req.headers['x-forwarded-for'];
    if (!forwarded) return peer;
    const hops = (Array.isArray(forwarded) ? forwarded.join(',') : forwarded).split(',').map((h) => h.trim());
    if (!hops.every((h) => addressKey(plain(h)))) return peer;
    return [...hops, peer].join(', ');
  }
}
