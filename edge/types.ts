/** What the edge keeps in memory for each routed share, and the change events it acts on (see edge/state/routes.ts). */
import type { CompiledPolicy } from './policy/compile.js';

export interface LoginProvider {
  id: string;
  type: 'OIDC' | 'GOOGLE' | 'GITHUB';
  clientId: string;
  /** Decrypted in the edge only, never logged. */
  clientSecret: string;
  issuerUrl: string | null;
  scopes: string[];
  /** e.g. ["*@example.com", "bob@example.org"] */
  emailPatterns: string[];
}

export interface ShareRoute {
  zId: string;
  hubId: string;
  envZId: string;
  /** The environment's reach: 'agent' = only through its connected agents (never directly), 'edge' = directly. */
  reach: 'agent' | 'edge';
  frontendId: string;
  target: URL;
  mutualTls: boolean;
  /** What the edge speaks to the target: HTTP/1.1 (undici, edge/upstream/upstream.ts; also when unset) or HTTP/2 (node:http2, edge/upstream/upstreamH2.ts). */
  targetProtocol?: 'http1' | 'h2';
  /** The share's auth provider (login required), or null. */
  auth: LoginProvider | null;
  /** The share's own oauthEmailDomains when set: a login must match these too. */
  emailDomains: string[] | null;
  /** oauthAuthorizationCheckInterval in ms (default PT3H). */
  checkIntervalMs: number;
  /** Exchanges are recorded for the request inspector (edge/inspect). */
  inspect?: boolean;
  /** The share's traffic policy, compiled when the route was loaded (edge/policy); undefined: none. */
  policy?: CompiledPolicy;
  /** Which agent carries a client's requests (agent-served environments): any, by client address, or by cookie. */
  affinity?: 'none' | 'client-ip' | 'cookie';
}

/**
 * A request's claim to an agent (a share with affinity): the client's address or its affinity cookie; `setCookie`
 * is filled in by the gateway when the answer must carry a new cookie (a Set-Cookie value).
 */
export interface Sticky {
  affinity: 'client-ip' | 'cookie';
  clientIp: string;
  cookie: string | undefined;
  secure: boolean;
  setCookie?: string;
}

/** A NOTIFY on channel edgehub_edge (migration 0500): which row of which table changed. */
export interface EdgeChange {
  table: string;
  op: 'INSERT' | 'UPDATE' | 'DELETE';
  hubId: string | null;
  id: string | null;
  /** A client certificate's notification carries the row as the edge keeps it (timestamps as JSON text). */
  certificate?: CertificateRow<string>;
}

/** A client certificate's columns the edge keeps (mutual TLS), its validity as `T`: Date as read, text as notified. */
export interface CertificateRow<T = Date> {
  id: string;
  hub_id: string;
  name: string;
  fingerprint_sha256: string;
  serial_number: string;
  issuer_id: string | null;
  not_before: T;
  not_after: T;
}

export const EDGE_CHANNEL = 'edgehub_edge';

/**
 * The agents' side of the edge: agents dial the TLS listener with their own ALPN protocol
 * and a client certificate; the gateway judges them and carries the traffic of their environments' shares.
 */
export interface AgentGateway {
  /** The ALPN protocol an agent offers on the TLS listener. */
  readonly alpn: string;
  /** A TLS connection that negotiated `alpn` (its certificate not yet judged): the gateway's from now on. */
  accept(socket: import('node:tls').TLSSocket): void;
  /**
   * How connections to `route`'s target are made when its environment is served by agents, with the key the
   * edge's pools are kept by; undefined only when the environment's reach is 'edge' (the edge connects itself).
   */
  connectorFor(route: ShareRoute, sticky?: Sticky): { key: string; connect: import('undici').buildConnector.connector } | undefined;
  /** A stream to `authority` (host:port) in the environment's network, through one of its connected agents. */
  openStream(hubId: string, envZId: string, authority: string): Promise<import('node:stream').Duplex>;
  /** Ids of the environment's agents connected to this edge. */
  connected(hubId: string, envZId: string): string[];
  /** Takes no new agents; open streams may finish within `graceMs`. */
  close(graceMs?: number): Promise<void>;
}
