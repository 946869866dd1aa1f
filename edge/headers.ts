/**
 * Which header lines cross the edge, in each direction. The request head towards a target is rebuilt from the
 * client's raw header lines; its framing (Content-Length or chunked) is never copied from what is left of the client's
 * headers but set by the HTTP client (undici) from the body actually sent.
 *
 * Dropped towards the target: hop-by-hop headers (RFC 9110 7.6.1) and those the client's Connection header lists,
 * except Host, Content-Length and Transfer-Encoding, which no Connection header can remove; every name containing
 * `_` (CGI-style servers read `X_Client_Certificate_Name` as `X-Client-Certificate-Name`; nginx drops them too);
 * the client's own copies of the headers only the edge sets (X-Forwarded-*, verified identities); `Expect` (the edge
 * answered 100 Continue itself). Added: X-Forwarded-For/Proto/Host, the identities the edge verified, and a `Via`
 * hop mark that lets an edge recognise a request it already forwarded (a loop).
 */
import type { IncomingMessage } from 'node:http';
import { ERROR_CODE_HEADER } from '../shared/errors.js';
import { HOP_BY_HOP } from '../shared/hopByHop.js';
import type { ExchangeTap } from './inspect/tap.js';
import { applyToLines } from './policy/headers.js';
import type { ShareRoute } from './types.js';
import { targetUnreachable } from './upstream/failures.js';

/**
 * Fields a trailer section may never carry (RFC 9110 6.5.1: framing, routing, request modifiers, authentication,
 * response control and content metadata): dropped from a target's trailers, so that none of them reaches a client
 * (an HTTP/1.1 client reading a Content-Length after the last chunk would take it for the answer's framing).
 */
export const FORBIDDEN_TRAILERS = new Set([
  'content-length',
  'transfer-encoding',
  'content-encoding',
  'content-type',
  'content-range',
  'trailer',
  'host',
  'cache-control',
  'expect',
  'max-forwards',
  'pragma',
  'range',
  'te',
  'if-match',
  'if-none-match',
  'if-modified-since',
  'if-unmodified-since',
  'if-range',
  'authorization',
  'proxy-authorization',
  'www-authenticate',
  'proxy-authenticate',
  'authentication-info',
  'proxy-authentication-info',
  'set-cookie',
  'cookie',
  'age',
  'date',
  'expires',
  'location',
  'retry-after',
  'vary',
  'warning',
]);
/**
 * The header naming the code of the edge's own refusals: a target's answer never carries it, so that a client can
 * tell an answer of the edge from one of the target (a target that writes it has it removed).
 */
export const EDGE_CODE_HEADER = ERROR_CODE_HEADER.toLowerCase();

/** Headers only the edge may set towards a target: a client's own are dropped, never passed on. */
export const EDGE_SET_HEADERS = new Set([
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'x-client-certificate-name',
  'x-client-certificate-fingerprint',
  'x-forwarded-email',
]);

/** Framing and routing headers a Connection header may never remove. */
const NOT_REMOVABLE = new Set(['host', 'content-length', 'transfer-encoding']);

/** Header values the edge adds itself (verified identities) must be valid field values (RFC 9110 5.5). */
const INVALID_FIELD_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

export interface ForwardContext {
  secure: boolean;
  /** Headers the edge adds (verified identity); set after the client's copies were dropped. */
  identity?: Record<string, string>;
  /** Replaces the Cookie header (the edge's own session cookie removed); undefined drops it. */
  cookie?: { value: string | undefined };
  /** An inspected share's exchange being recorded (edge/inspect/recording.ts). */
  tap?: ExchangeTap;
  /** The X-Forwarded-For the target gets (a trusted proxy's chain and the peer); the peer's address when unset. */
  forwardedFor?: string;
  /**
   * The client's address as the share policy judges it (a trusted proxy's X-Forwarded-For read, edge/policy/clientAddress.ts):
   * what `client-ip` affinity hashes; the peer's address when unset.
   */
  clientAddress?: string;
}

/** The token a Connection header lists, lower-cased. */
export function connectionTokens(values: (string | undefined)[]): Set<string> | undefined {
  let tokens: Set<string> | undefined;
  for (const value of values) if (value) tokens = addTokens(tokens, value);
  return tokens;
}

/**
 * `value`'s Connection tokens added to `tokens`. `keep-alive` and `close`, what nearly every Connection header says,
 * name no other header worth a set: both are hop-by-hop already.
 */
function addTokens(tokens: Set<string> | undefined, value: string): Set<string> | undefined {
  if (value.length <= 10) {
    const v = value.toLowerCase();
    if (v === 'keep-alive' || v === 'close') return tokens;
  }
  for (const t of value.toLowerCase().split(',')) {
    const token = t.trim();
    if (token) (tokens ??= new Set()).add(token);
  }
  return tokens;
}

/** How many times a header name occurs among raw header lines. */
export function countOf(raw: string[], name: string): number {
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i].length === name.length && raw[i].toLowerCase() === name) n++;
  return n;
}

export const clientAddress = (req: IncomingMessage) => {
  const address = req.socket.remoteAddress ?? '';
  return address.startsWith('::ffff:') ? address.slice(7) : address;
};

/**
 * The header lines (flat name, value list) the target receives, without framing: the HTTP client adds
 * Content-Length or chunked framing for the body it actually sends. `via` is this edge's hop mark; `route` the share
 * (its policy's request header rules apply). A verified identity that cannot be sent in a header fails the exchange
 * (EH_TARGET_UNREACHABLE, naming the share's target).
 */
export function requestHeaderLines(req: IncomingMessage, ctx: ForwardContext, via: string, route?: Pick<ShareRoute, 'target' | 'policy'>): string[] {
  const rules = route?.policy?.requestHeaders;
  const raw = req.rawHeaders;
  // the names a Connection header lists (most requests have none, or only keep-alive / close)
  let listed: Set<string> | undefined;
  let host: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i];
    if (name.length === 10 && name.toLowerCase() === 'connection') listed = addTokens(listed, raw[i + 1]);
    else if (host === undefined && name.length === 4 && name.toLowerCase() === 'host') host = raw[i + 1];
  }
  let out: string[] = [];
  let viaSeen: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const original = raw[i];
    const name = original.toLowerCase();
    if (name.includes('_')) continue;
    if (HOP_BY_HOP.has(name) || EDGE_SET_HEADERS.has(name) || name === 'expect' || name === 'content-length') continue;
    if (listed?.has(name) && !NOT_REMOVABLE.has(name)) continue;
    if (name === 'cookie' && ctx.cookie) continue;
    if (name === 'via') {
      viaSeen = viaSeen === undefined ? raw[i + 1] : `${viaSeen}, ${raw[i + 1]}`;
      continue;
    }
    out.push(original, raw[i + 1]);
  }
  // the share policy's header rules act on the client's lines only: the edge's own, added below, are beyond them
  if (rules) out = applyToLines(out, rules);
  if (ctx.cookie?.value) out.push('cookie', ctx.cookie.value);
  out.push('x-forwarded-for', ctx.forwardedFor ?? clientAddress(req), 'x-forwarded-proto', ctx.secure ? 'https' : 'http');
  if (host) out.push('x-forwarded-host', host);
  out.push('via', viaSeen ? `${viaSeen}, ${via}` : via);
  if (ctx.identity) {
    for (const name in ctx.identity) {
      const value = ctx.identity[name];
      if (INVALID_FIELD_VALUE.test(value)) throw targetUnreachable(route?.target.host ?? '', 'EDGE_INVALID_HEADER');
      out.push(name, value);
    }
  }
  return out;
}

/** The length of the client's body as its Content-Length says (node's parser validated it), or null (none/chunked). */
export function declaredLength(req: IncomingMessage): number | null {
  if (req.headers['transfer-encoding'] !== undefined) return null;
  const value = req.headers['content-length'];
  return value === undefined ? null : Number(value);
}

/**
 * Whether a request carries a body (RFC 9112 6.3): a chunked one, or a Content-Length above zero. Over HTTP/2 (RFC
 * 9113 8.1): unless its HEADERS frame ended the stream or its Content-Length is zero.
 */
export const hasBody = (req: IncomingMessage) =>
  req.httpVersionMajor === 2
    ? !(req as unknown as { stream: { endAfterHeaders: boolean } }).stream.endAfterHeaders && req.headers['content-length'] !== '0'
    : req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');

/**
 * The target's answer header lines towards the client: hop-by-hop headers and those its Connection header lists are
 * dropped (never Content-Length, which frames what the client receives). Header names arrive from undici as bytes.
 * `hostHeader`: the request's Host; a Set-Cookie is made host-only for it (hostOnlyCookie).
 */
export function responseHeaderLines(raw: (Buffer | string)[], keepUpgrade = false, hostHeader?: string): string[] {
  const out: string[] = [];
  let listed: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i];
    if (name.length === 10 && name.toString('latin1').toLowerCase() === 'connection') listed = addTokens(listed, raw[i + 1].toString('latin1'));
  }
  let cookieDomain: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const original = raw[i].toString('latin1');
    const name = original.toLowerCase();
    if (keepUpgrade && (name === 'upgrade' || name === 'connection')) {
      out.push(original, raw[i + 1].toString('latin1'));
      continue;
    }
    if (HOP_BY_HOP.has(name) || name === EDGE_CODE_HEADER) continue;
    if (listed?.has(name) && !NOT_REMOVABLE.has(name)) continue;
    const value = raw[i + 1].toString('latin1');
    if (hostHeader !== undefined && name === 'set-cookie') out.push(original, hostOnlyCookie(value, (cookieDomain ??= cookieHost(hostHeader))));
    else out.push(original, value);
  }
  return out;
}

/** The request's host name as a cookie domain: lower case, without port or trailing dot. */
export function cookieHost(hostHeader: string | undefined): string {
  const host = (hostHeader ?? '').toLowerCase();
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d*$/, '');
  return name.replace(/\.$/, '');
}

/**
 * A target's Set-Cookie as the client may receive it: a cookie whose Domain attribute names anything but the share's
 * own host (its parent domain, where every other share and maybe the API live, or a sibling) is made host-only by
 * removing its Domain attributes, so one tenant's share can neither set nor shadow a cookie of another share or of
 * the service. Attributes are read as browsers read them (RFC 6265 5.2): split on `;`, names compared without case
 * and around whitespace, one leading dot ignored, the last Domain counting; any Domain other than the host (a
 * quoted value included) makes the whole line host-only, whichever one a browser would take.
 */
export function hostOnlyCookie(line: string, host: string): string {
  const parts = line.split(';');
  let foreign = false;
  for (let i = 1; i < parts.length; i++) {
    const eq = parts[i].indexOf('=');
    if ((eq < 0 ? parts[i] : parts[i].slice(0, eq)).trim().toLowerCase() !== 'domain') continue;
    const domain =
      eq < 0
        ? ''
        : parts[i]
            .slice(eq + 1)
            .trim()
            .toLowerCase()
            .replace(/^\./, '')
            .replace(/\.$/, '');
    // an empty Domain is ignored by browsers (the cookie stays host-only): harmless, but removed all the same
    if (domain !== host) foreign = true;
  }
  if (!foreign) return line;
  const isDomain = (part: string) => (part.includes('=') ? part.slice(0, part.indexOf('=')) : part).trim().toLowerCase() === 'domain';
  return [parts[0], ...parts.slice(1).filter((part) => !isDomain(part))].join(';');
}
