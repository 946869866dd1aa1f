import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import tls, { type TLSSocket } from 'node:tls';
import type { Socket } from 'node:net';
import pg from 'pg';
import { config } from '../shared/config.js';
import { redisConfigured } from '../shared/redis.js';
import { databaseUrl } from '../shared/db.js';
import { egressPolicy } from '../shared/egress.js';
import { logger } from '../shared/logger.js';
import { insertSamples, type UsageRow } from '../shared/metrics/store.js';
import { accessControl } from './access/index.js';
import { AgentDirectory } from './agents/directory.js';
import { affinityKey } from './agents/affinity.js';
import { TargetChecks } from './agents/checks.js';
import { AgentGatewayServer } from './agents/gateway.js';
import { LiveEdges } from './agents/liveEdges.js';
import { Presence } from './agents/presence.js';
import { IpsecHost } from './ipsec/host.js';
import { startInspection, type Inspection } from './inspect/index.js';
import { ChangeFeed } from './state/changes.js';
import { ChangeRouting } from './state/changeRouting.js';
import { adoptPeer, interpose } from './front/front.js';
import { http2Front } from './front/http2.js';
import { connectionDispatch, requestDispatch } from './pipeline/dispatch.js';
import { Meter } from './meter.js';
import { HubLimiter } from './pipeline/limits.js';
import { Proxy } from './upstream/proxy.js';
import { hopMark } from './pipeline/refusals.js';
import { OpenConnections } from './revocation.js';
import { RouteTable } from './state/routes.js';
import { observeUpstreamError } from './telemetry.js';
import { CertificateStore } from './front/tls.js';
import { httpServer, listen, startConnectionChecks } from './front/listen.js';
import type { AccessControl } from './access/types.js';
import type { AgentGateway, ShareRoute } from './types.js';
import { UpstreamPools } from './upstream/upstream.js';
import { UpstreamH2 } from './upstream/upstreamH2.js';
import { TcpUpstream } from './upstream/tcp.js';
import { TcpShares } from './tcp/shares.js';
import { ClientAddress } from './policy/clientAddress.js';
import { PolicyGate } from './policy/gate.js';
import { PolicyRateLimiter } from './policy/ratelimit.js';

export interface EdgeOptions {
  httpPort?: number;
  httpsPort?: number;
  /** Interface to listen on (default: all). */
  host?: string;
  databaseUrl?: string;
  access?: AccessControl;
  /** Operator certificate files for standard frontends (default: HUB_EDGE_TLS_CERT_FILE / HUB_EDGE_TLS_KEY_FILE). */
  tlsFiles?: { certFile?: string; keyFile?: string };
  /** Where usage samples go (default: the usage store, shared/metrics/store.ts). */
  store?: (rows: UsageRow[]) => Promise<void>;
  /** false: this edge never runs the IPsec data plane (default: it competes for the IPsec host role under strongSwan). */
  ipsec?: false;
  /** The agents' side of the TLS listener (edge/types.ts AgentGateway); default: edge/agents/gateway.ts. */
  agents?: AgentGateway;
  /** The addresses agents dial this edge at, published for the agents of every edge (default: HUB_EDGE_AGENT_ADDRESSES, else 127.0.0.1:<TLS port>). */
  agentAddresses?: string[];
  /** false: no request inspection on this edge (default: on where Redis is configured). */
  inspect?: false;
  /**
   * CIDRs of load balancers whose connections begin with a PROXY protocol header, and of the proxies whose
   * X-Forwarded-For share policies believe (default: HUB_EDGE_TRUSTED_PROXIES).
   */
  trustedProxies?: string[];
}

export interface Edge {
  httpPort: number | undefined;
  httpsPort: number | undefined;
  routes: RouteTable;
  meter: Meter;
  /** The agents' gateway (connected agents, streams through them). */
  agents: AgentGateway;
  /** TCP shares' ports (edge/tcp/shares.ts). */
  tcp: TcpShares;
  /** The IPsec data plane when this edge may run it (strongSwan provider). */
  ipsec: IpsecHost | undefined;
  /** Request inspection (capture and replays), unless turned off. */
  inspection: Inspection | undefined;
  /** Resolves once every change queued so far has been applied (for tests). */
  settled(): Promise<void>;
  stop(graceMs?: number): Promise<void>;
}

/** This edge process's name in agent_connections. */
const edgeId = () => `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;

/** The edge: routes each request by Host to its share's target, after its access checks. */
export async function startEdge(options: EdgeOptions = {}): Promise<Edge> {
  const cfg = config().edge;
  // HUB_EDGE_HOST: several edges on one host, each listening on an address of its own
  options = { ...options, host: options.host ?? cfg.host };
  const url = options.databaseUrl ?? databaseUrl();
  const { statementTimeoutMs, acquireTimeoutMs } = config().security;
  // no wait on the database without an end: a client of the pool is waited for at most HUB_DB_ACQUIRE_TIMEOUT_MS,
  // a statement runs at most HUB_DB_STATEMENT_TIMEOUT_MS, and an answer that never comes (a server that hangs) is
  // given up a little later. A reload that fails is logged and the next change or resync tries again.
  const pool = new pg.Pool({
    connectionString: url,
    max: 4,
    application_name: 'edgehub-edge',
    connectionTimeoutMillis: acquireTimeoutMs,
    ...(statementTimeoutMs > 0 ? { statement_timeout: statementTimeoutMs, query_timeout: statementTimeoutMs + 5000 } : {}),
  });
  pool.on('error', (err) => logger.warn({ err: err.message }, 'edge: idle database connection failed'));
  // mutual TLS and login (edge/access) unless the caller brings its own
  const access = options.access ?? accessControl(pool, config().secretKey);
  const routes = new RouteTable(pool);
  const certificates = new CertificateStore(pool, options.tlsFiles ?? { certFile: cfg.tlsCertFile, keyFile: cfg.tlsKeyFile });
  const meter = new Meter(options.store ?? insertSamples, { flushMs: cfg.flushMs, pendingMaxRows: cfg.pendingMaxRows });
  const ownPorts = new Set<number>();
  // agents: who they are, where they are connected, and the gateway that carries traffic
  const directory = new AgentDirectory(pool);
  const checks = new TargetChecks(pool);
  const id = edgeId();
  let live: LiveEdges | undefined;
  const gateway = options.agents
    ? undefined
    : new AgentGatewayServer({
        directory,
        presence: new Presence(pool, id),
        edges: () => ({ addresses: live?.addresses ?? [], self: live?.self ?? [] }),
        // what an agent may connect to: its environment's share targets and IPsec share targets
        targetsOf: (hubId: string, envZId: string): string[] => [
          ...routes.targetsOf(hubId, envZId),
          ...tcp.targetsOf(hubId, envZId),
          ...(ipsec?.targetsOf(hubId, envZId) ?? []),
        ],
        sharesOf: (hubId: string, envZId: string) => [...routes.sharesOf(hubId, envZId), ...tcp.sharesOf(hubId, envZId)],
        affinityKey: affinityKey(config().secretKey),
        checksOf: (hubId: string, targets: string[]) => checks.of(hubId, targets),
        connectTimeoutMs: cfg.upstreamTimeoutMs,
      });
  const agents: AgentGateway = options.agents ?? gateway!;
  const pools = new UpstreamPools({
    policy: egressPolicy(),
    timeoutMs: cfg.upstreamTimeoutMs,
    readTimeoutMs: cfg.upstreamReadTimeoutMs,
    ownPorts: () => ownPorts,
    connectorFor: (route, sticky) => agents.connectorFor(route, sticky),
  });
  const mark = hopMark(config().secretKey);
  const inspection =
    options.inspect === false || !redisConfigured()
      ? undefined
      : startInspection({ edge: id, routeOf: (zId) => routes.byShare(zId), pools, meter, via: `1.1 ${mark}` });
  const onUpstreamError = (route: ShareRoute, kind: string) => observeUpstreamError(route.frontendId, kind);
  const h2 = new UpstreamH2({
    policy: egressPolicy(),
    timeoutMs: cfg.upstreamTimeoutMs,
    readTimeoutMs: cfg.upstreamReadTimeoutMs,
    ownPorts: () => ownPorts,
    connectorFor: (route) => agents.connectorFor(route),
    via: `1.1 ${mark}`,
    onUpstreamError,
  });
  const proxy = new Proxy(meter, pools, { via: `1.1 ${mark}`, upgradeIdleMs: cfg.upgradeIdleTimeoutMs, onUpstreamError, h2 });
  // IPsec on strongSwan: the data plane runs in the edge that holds the IPsec host lock (edge/ipsec/host.ts)
  const ipsecConfig = config().ipsec;
  logger.info({ provider: ipsecConfig.provider, chosen: ipsecConfig.chosen }, `edge: IPsec provider ${ipsecConfig.provider}`);
  const ipsec: IpsecHost | undefined =
    ipsecConfig.provider === 'strongswan' && options.ipsec !== false
      ? new IpsecHost({
          databaseUrl: url,
          pool,
          gateway: agents,
          meter,
          dataDir: config().dataDir,
          vpcCidr: config().vpcCidr,
          wanNetns: ipsecConfig.wanNetns,
          onTargetsChanged: () => gateway?.targetsChanged(),
        })
      : undefined;
  const limiter = new HubLimiter(cfg.hubMaxConnections);
  const trustedProxies = options.trustedProxies ?? cfg.trustedProxies;
  // shares' traffic policies: the client address they judge, their rate limits counted across edges in Redis
  const rateLimits = new PolicyRateLimiter();
  const gate = new PolicyGate(new ClientAddress(trustedProxies), rateLimits);
  // TCP shares' ports: each connection runs the pipeline's connection steps, its bytes carried by the TCP upstream
  const tcpUpstream = new TcpUpstream({
    policy: egressPolicy(),
    timeoutMs: cfg.upstreamTimeoutMs,
    ownPorts: () => ownPorts,
    connectorFor: (route) => agents.connectorFor(route),
  });
  const tcp = new TcpShares({
    pool,
    host: options.host,
    mutualTls: access.mutualTls,
    ownPorts,
    idleMs: cfg.tcpIdleTimeoutMs,
    accept: connectionDispatch({
      access,
      meter,
      maxConnections: cfg.tcpMaxConnections,
      contextFor: (name) => certificates.contextFor(name),
      upstream: tcpUpstream,
    }),
  });
  const connections = new OpenConnections();
  const feed = new ChangeFeed(url);
  const changes = new ChangeRouting({ routes, tcp, certificates, access, directory, checks, gateway, ipsec, connections, live: () => live });
  feed.on('resync', () => void changes.reloadEverything());
  feed.on('change', (change) => changes.apply(change));
  // listening first, loading second: a change committed in between is seen by the load or notified after it
  await feed.start();
  await Promise.all([routes.reloadAll(), certificates.reload(), access.mutualTls?.load(), directory.reload(), checks.reload()]);
  await tcp.reloadAll();
  const resync = cfg.resyncMs > 0 ? setInterval(() => void changes.reloadEverything(), cfg.resyncMs) : undefined;
  resync?.unref();
  meter.start();
  await ipsec?.start();

  const { handle, upgrade } = requestDispatch({ routes, access, limiter, connections, proxy, meter, mark, capture: inspection?.capture, gate });

  /** A listener as stop() sees it: the plain HTTP server, or the TLS server with the HTTP server behind it. */
  interface Listener {
    close(done: () => void): void;
    closeIdle(): void;
    closeAll(): void;
  }
  const listeners: Listener[] = [];
  let httpPort: number | undefined;
  let httpsPort: number | undefined;
  const wantHttp = options.httpPort ?? cfg.httpPort;
  const wantHttps = options.httpsPort ?? cfg.httpsPort;
  try {
    if (wantHttp !== 0 || options.httpPort === 0) {
      const server = httpServer(handle(false), cfg.headersTimeoutMs);
      interpose(server, { trustedProxies, name: 'http' });
      server.on('upgrade', upgrade(false));
      httpPort = await listen(server, wantHttp, options.host);
      ownPorts.add(httpPort);
      listeners.push({
        close: (done) => server.close(() => done()),
        closeIdle: () => server.closeIdleConnections(),
        closeAll: () => server.closeAllConnections(),
      });
    }
    if (wantHttps !== 0 || options.httpsPort === 0) {
      // the TLS listener: HTTP/1.1 for clients, and the agents' connections (their own ALPN protocol) for the
      // agent gateway; each TLS connection is handed to the HTTP server behind it (a documented way to feed
      // node:http connections of one's own) or to the gateway
      const app = startConnectionChecks(httpServer(handle(true), cfg.headersTimeoutMs));
      app.on('upgrade', upgrade(true));
      const h2front = http2Front(handle(true));
      const server = tls.createServer({
        SNICallback: certificates.sniCallback,
        // every TLS client may present a certificate; whether a share needs one is decided per request
        requestCert: true,
        rejectUnauthorized: false,
        ALPNProtocols: ['h2', 'http/1.1', agents.alpn],
        ...access.tlsOptions,
      });
      // a PROXY header from a trusted load balancer, and HTTP/2 penalties refused before TLS (edge/front/front.ts)
      interpose(server, { trustedProxies, penaltyLeft: (address) => h2front.penaltyLeft(address), name: 'tls' });
      server.on('secureConnection', (socket: TLSSocket) => {
        adoptPeer(socket);
        if (socket.alpnProtocol === agents.alpn) return agents.accept(socket);
        if (socket.alpnProtocol === 'h2') return h2front.accept(socket);
        app.emit('connection', socket);
      });
      server.on('tlsClientError', () => undefined);
      // every connection of the listener, so that a stop can cut those no server behind it knows of yet (a client
      // still in its TLS handshake, which the listener's close would otherwise wait for until its handshake timeout)
      const raws = new Set<Socket>();
      server.on('connection', (raw: Socket) => {
        raws.add(raw);
        raw.once('close', () => raws.delete(raw));
      });
      httpsPort = await listen(server, wantHttps, options.host);
      ownPorts.add(httpsPort);
      listeners.push({
        close: (done) => server.close(() => done()),
        closeIdle: () => {
          app.closeIdleConnections();
          h2front.close();
        },
        closeAll: () => {
          app.closeAllConnections();
          h2front.destroy();
          for (const raw of raws) raw.destroy();
        },
      });
    }
    // agents of every edge learn of this one (and this one's agents of the others)
    if (gateway && httpsPort !== undefined) {
      const published = options.agentAddresses ?? (cfg.agentAddressesGiven ? cfg.agentAddresses : [`127.0.0.1:${httpsPort}`]);
      live = new LiveEdges(pool, id, published, () => gateway.edgesChanged(), cfg.heartbeatMs, 3 * cfg.heartbeatMs);
      await live.start();
    }
  } catch (err) {
    for (const l of listeners) l.close(() => undefined);
    await inspection?.stop();
    await rateLimits.close();
    await feed.stop();
    await pool.end();
    throw err;
  }

  return {
    httpPort,
    httpsPort,
    agents,
    ipsec,
    inspection,
    tcp,
    routes,
    meter,
    settled: () => changes.settled(),
    async stop(graceMs = 10_000) {
      if (resync) clearInterval(resync);
      connections.close();
      // agents' connections are the TLS listener's too: they close alongside the clients' (the listener's close
      // waits for them), finishing the streams in flight
      await live?.close();
      const agentsClosed = agents.close(graceMs);
      await new Promise<void>((resolve) => {
        let open = listeners.length;
        if (!open) return resolve();
        const force = setTimeout(() => listeners.forEach((l) => l.closeAll()), graceMs);
        force.unref();
        for (const l of listeners) {
          l.close(() => {
            if (--open === 0) {
              clearTimeout(force);
              resolve();
            }
          });
          l.closeIdle();
        }
      });
      await agentsClosed;
      await inspection?.stop();
      await Promise.all([ipsec?.stop(), tcp.close()]);
      await meter.stop();
      await proxy.close();
      await rateLimits.close();
      certificates.close();
      await feed.stop();
      await pool.end();
    },
  };
}
