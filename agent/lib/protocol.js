/**
 * What the edge and the agent agree on. The server imports this module from here (one definition of the protocol).
 *
 * The agent dials the edge's TLS listener offering ALPN `edgehub-agent/1` and its certificate, then serves HTTP/2 on
 * that connection: the edge is the HTTP/2 client (a reversed connection, as cloudflared does). The edge sends:
 * - `PUT /edgehub/v1/targets` with `{"targets": ["host:port", ...]}`: the targets of the environment's shares, the
 *   only ones the agent will connect to for this edge (sent on connect and whenever they change); answered 200 with
 *   `{"serves": [...], "weight", "priority", "draining", "down": [...]}`: the targets of the list this connection
 *   carries (those its `--allow` patterns admit: several processes may share one agent identity, each serving its
 *   own), and its pool state (below). An older agent answers 204: it serves every target, weight 1, priority 0;
 * - `GET /edgehub/v1/state`: answered 200 and kept open; the agent writes its pool state as one JSON line
 *   (`{"weight","priority","draining","down"}`) at once and again whenever it changes (draining, targets found down
 *   or up again);
 * - `PUT /edgehub/v1/edges` with `{"edges": ["host:port", ...]}`: the agent addresses of every live edge (sent on
 *   connect and whenever the set changes); the agent dials each of them too and stops dialling those that left;
 * - `CONNECT host:port`: a stream carried to that target (HTTP/1.1 exchanges, WebSockets and raw TCP alike);
 *   answered 200 once the agent is connected to the target, 403 when it refuses the target, 502 when the target
 *   cannot be reached, with the reason in `edgehub-error`.
 */
import net from 'node:net';

export const AGENT_ALPN = 'edgehub-agent/1';
export const TARGETS_PATH = '/edgehub/v1/targets';
export const EDGES_PATH = '/edgehub/v1/edges';
export const STATE_PATH = '/edgehub/v1/state';
export const ERROR_HEADER = 'edgehub-error';
/** An agent's weight in its environment's pool (`--weight`) and its priority (`--priority`, lower is preferred). */
export const WEIGHT = { min: 1, max: 100, default: 1 };
export const PRIORITY = { min: 0, max: 9, default: 0 };
/** Most edge addresses one message may name (the agent ignores the rest). */
export const MAX_EDGES = 64;

/**
 * The HTTP check of a target, as the edge sends it with the targets (`checks: {"host:port": {...}}`): the share's
 * health check, which the agent probes the target with instead of a bare TCP connection.
 * @typedef {{ method: string; path: string; status: number; timeoutMs: number; tls: boolean; host: string }} TargetCheck
 */

/**
 * The checks of a targets message, those that are well formed and of one of `targets`.
 * @param {unknown} checks
 * @param {Set<string>} targets
 * @returns {Map<string, TargetCheck>}
 */
export function parseChecks(checks, targets) {
  /** @type {Map<string, TargetCheck>} */
  const out = new Map();
  if (!checks || typeof checks !== 'object') return out;
  for (const [target, c] of Object.entries(checks)) {
    if (!targets.has(target) || !c || typeof c !== 'object') continue;
    const { method, path, status, timeoutMs, tls, host } = /** @type {Record<string, unknown>} */ (c);
    if (typeof method !== 'string' || !/^[A-Z]{1,16}$/.test(method) || typeof path !== 'string' || !path.startsWith('/') || path.length > 2048) continue;
    if (!Number.isInteger(status) || typeof host !== 'string' || !host || host.length > 255) continue;
    const timeout = Number.isInteger(timeoutMs) ? Math.min(Math.max(/** @type {number} */ (timeoutMs), 100), 60_000) : 5000;
    out.set(target, { method, path, status: /** @type {number} */ (status), timeoutMs: timeout, tls: tls === true, host });
  }
  return out;
}

/**
 * `host:port` of a target, the form CONNECT names it in (IPv6 in brackets, host in lower case).
 * @param {string} host
 * @param {number | string} port
 * @returns {string}
 */
export function authorityOf(host, port) {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return `${net.isIPv6(bare) ? `[${bare}]` : bare}:${port}`;
}

/**
 * Splits `host:port` (IPv6 in brackets); undefined when it is not one.
 * @param {string} authority
 * @returns {{ host: string; port: number } | undefined}
 */
export function parseAuthority(authority) {
  const match = /^(?:\[([0-9a-f:.]+)\]|([^:[\]\s/]+)):(\d{1,5})$/i.exec(authority.trim());
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port < 1 || port > 65535) return undefined;
  const host = (match[1] ?? match[2]).toLowerCase();
  if (match[1] && !net.isIPv6(host)) return undefined;
  return { host, port };
}

/**
 * The target of a share's URL as an authority (default ports for http and https).
 * @param {URL} target
 * @returns {string}
 */
export function targetAuthority(target) {
  const port = target.port || (target.protocol === 'https:' ? '443' : '80');
  return authorityOf(target.hostname, port);
}

/**
 * An `--allow` pattern: `host:port`, `*.domain:port` or `CIDR:port` (port `*` for any).
 * @typedef {{ text: string; matches(host: string, port: number): boolean }} AllowPattern
 */

/**
 * @param {string} text
 * @returns {AllowPattern}
 */
export function parseAllowPattern(text) {
  const fail = () => new Error(`--allow '${text}': expected host:port, *.domain:port or CIDR:port (port may be *)`);
  const match = /^(.+):(\d{1,5}|\*)$/.exec(text.trim());
  if (!match) throw fail();
  const portText = match[2];
  const port = portText === '*' ? undefined : Number(portText);
  if (port !== undefined && (port < 1 || port > 65535)) throw fail();
  /** @param {number} p */
  const portOk = (p) => port === undefined || p === port;
  const hostText = match[1].replace(/^\[|\]$/g, '').toLowerCase();
  const cidr = /^([0-9a-f:.]+)\/(\d{1,3})$/i.exec(hostText);
  if (cidr) {
    const family = net.isIPv4(cidr[1]) ? 'ipv4' : net.isIPv6(cidr[1]) ? 'ipv6' : undefined;
    const prefix = Number(cidr[2]);
    if (!family || prefix > (family === 'ipv4' ? 32 : 128)) throw fail();
    const list = new net.BlockList();
    list.addSubnet(cidr[1], prefix, family);
    return { text, matches: (host, p) => portOk(p) && net.isIP(host) !== 0 && list.check(host, net.isIPv4(host) ? 'ipv4' : 'ipv6') };
  }
  if (hostText.startsWith('*.')) {
    const suffix = hostText.slice(1);
    if (suffix.length < 2 || suffix.includes('*')) throw fail();
    return { text, matches: (host, p) => portOk(p) && host.toLowerCase().endsWith(suffix) && host.length > suffix.length };
  }
  if (hostText.includes('*') || !hostText) throw fail();
  return { text, matches: (host, p) => portOk(p) && host.toLowerCase() === hostText };
}
