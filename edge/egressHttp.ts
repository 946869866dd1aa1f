/**
 * The one way out for HTTP the edge makes on behalf of tenants: share targets and identity providers (login discovery,
 * token, userinfo, JWKS); health checks and ACME check the same policy in their own clients. Every connection is made
 * by an undici connector that checks the address and port it actually connects to against the egress policy
 * (shared/egress.ts: HUB_EGRESS_DENY and the service's own endpoints): IP literals before connecting, names through
 * the policy's lookup for that port (so DNS rebinding cannot slip by), and the socket's remote address once more when
 * connected, before a request is sent. Where a caller names its own listening ports (the edge), a connection to one
 * of this host's addresses at one of those ports is refused the same way. A refused connection fails with the edge's
 * answer itself, EH_EGRESS_DENIED (a DomainError naming the address and the rule).
 */
import { isIP, type Socket } from 'node:net';
import { Agent, buildConnector, fetch as undiciFetch, type Dispatcher } from 'undici';
import { EgressDeniedError, egressDenial, egressPolicy, isOwnAddress, type EgressPolicy } from '../shared/egress.js';
import { DomainError } from '../shared/errors.js';

interface ConnectorOptions {
  /** Connect (and TLS handshake) timeout. */
  timeoutMs: number;
  /** Ports this process listens on: a connection to one of them on this host's own addresses is refused. */
  ownPorts?: () => ReadonlySet<number>;
  /** Keep the sending side open after the peer ended its own (TCP half-close; raw byte streams need it). */
  allowHalfOpen?: boolean;
}

/** The edge's refusal of a connection the egress policy denies. */
const denied = (host: string, address: string, rule: string) => new DomainError('EH_EGRESS_DENIED', egressDenial(host, address, rule));

const bare = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);

/** An undici connector (Client/Pool/Agent `connect` option) that enforces the egress policy. */
export function egressConnector(policy: EgressPolicy, options: ConnectorOptions): buildConnector.connector {
  // one undici connector per target port, each resolving names through the policy's lookup for that port
  const connectors = new Map<number, buildConnector.connector>();
  const byPort = (port: number) => {
    let connect = connectors.get(port);
    if (!connect) {
      connect = buildConnector({
        timeout: options.timeoutMs,
        lookup: policy.lookupFor(port) as never,
        keepAlive: true,
        keepAliveInitialDelay: 60_000,
        noDelay: true,
        ...(options.allowHalfOpen ? { allowHalfOpen: true } : {}),
      } as buildConnector.BuildOptions);
      connectors.set(port, connect);
    }
    return connect;
  };
  /** Why connecting to `address` at `port` is refused, or undefined. */
  const refusal = (address: string, port: number) =>
    policy.deniesAt(address, port) ?? (options.ownPorts?.().has(port) && isOwnAddress(address) ? "the edge's own listener" : undefined);
  return (opts, callback) => {
    const host = bare(opts.hostname);
    const port = Number(opts.port) || (opts.protocol === 'https:' ? 443 : 80);
    const connect = () => {
      if (isIP(host)) {
        const rule = refusal(host, port);
        if (rule) return callback(denied(host, host, rule), null);
      }
      byPort(port)(opts, (err, socket) => {
        // a name the policy's lookup refused (each of its addresses denied)
        if (err instanceof EgressDeniedError) return callback(denied(err.host, err.address, err.rule), null);
        if (err || !socket) return callback(err ?? new Error('no connection'), null);
        const remote = (socket as Socket).remoteAddress;
        const rule = remote ? refusal(remote, port) : 'no remote address';
        if (rule) {
          socket.destroy();
          return callback(denied(opts.hostname, remote ?? '?', rule), null);
        }
        callback(null, socket);
      });
    };
    // the first connections of a process wait for the names of the service's own endpoints to be resolved once
    policy.ready().then(connect, connect);
  };
}

let shared: { policy: EgressPolicy; agent: Agent } | undefined;

/** A dispatcher for fetch-style calls (the identity providers of edge login) under the current egress policy. */
function egressDispatcher(): Dispatcher {
  const policy = egressPolicy();
  if (shared?.policy !== policy) {
    void shared?.agent.close();
    shared = { policy, agent: new Agent({ connect: egressConnector(policy, { timeoutMs: 10_000 }), keepAliveTimeout: 4_000 }) };
  }
  return shared.agent;
}

/** `fetch` whose connections go through the egress policy. */
export const egressFetch = ((input: Parameters<typeof undiciFetch>[0], init?: Parameters<typeof undiciFetch>[1]) =>
  undiciFetch(input, { ...init, dispatcher: egressDispatcher() })) as unknown as typeof globalThis.fetch;
