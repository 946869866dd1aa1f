/**
 * The agents' side of the edge (the protocol is agent/lib/protocol.js): an agent dials the TLS listener
 * with ALPN `edgehub-agent/1` and its certificate; once its certificate names an enrolled agent (edge/agents/
 * directory.ts), the edge speaks HTTP/2 to it as the client, over the connection the agent opened. Each connection
 * to a share's target is one CONNECT stream with its own flow control, so one slow download never stalls the rest
 * (node:http2 does the multiplexing; nothing here frames bytes).
 *
 * - Routing: an environment whose reach is 'agent' is served only through its own connected agents. Each request
 *   (each TCP connection) chooses its agent connection (edge/agents/pool.ts: those that serve the share's target,
 *   not draining, not reporting it down, of the lowest priority, by weight), and the pools of edge/upstream/upstream.ts keep
 *   their target connections per agent connection (`connectorFor`'s key names it), so kept-alive connections never
 *   carry a request to an agent that was not chosen for it. With none connected the connector fails at once with
 *   EH_NO_AGENT (502); with every one reporting the target down, with EH_TARGET_DOWN_AT_AGENTS (502): each failure
 *   is raised here as the exchange's answer (a DomainError of shared/errors.ts), never mapped afterwards.
 * - Pool state and targets (edge/agents/briefing.ts): the agent answers its targets with what it serves and its
 *   weight, priority, draining and targets down, and keeps a state stream open (GET /edgehub/v1/state) on which it
 *   says every change. Each agent is told the targets of its environment's shares (PUT /edgehub/v1/targets) before it
 *   carries anything, and again before a stream to a target it was not told of yet; the agent refuses any other target.
 * - Connections (edge/agents/link.ts): the HTTP/2 session over each agent's socket, with its flood watch.
 * - Liveness and revocation: a PING every `pingMs`, the connection dropped when one goes unanswered; an agent removed
 *   from the directory (revoked, its hub or environment deleted) has its connections closed at once.
 */
import { createHash } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { buildConnector } from 'undici';
import { AGENT_ALPN, targetAuthority } from 'edgehub-agent/protocol';
import { isDomainError, refusal } from '../../shared/errors.js';
import { logger } from '../../shared/logger.js';
import type { AgentGateway, ShareRoute, Sticky } from '../types.js';
import { affinityCookie, affinityToken, byClient, names } from './affinity.js';
import { AgentBriefing, type BriefingOptions } from './briefing.js';
import { envKey, type AgentDirectory } from './directory.js';
import { AgentFigures } from './figures.js';
import { AgentAdmission, MAX_STREAMS_PER_CONNECTION } from './limits.js';
import { type Link, openLink } from './link.js';
import { byWeight, choose, eligible } from './pool.js';
import { connectStream, streamConnector, Unanswered } from './streams.js';

interface GatewayOptions extends BriefingOptions {
  directory: AgentDirectory;
  pingMs?: number;
  /** The key affinity cookies are made with (edge/agents/affinity.ts). */
  affinityKey?: Buffer;
}

export class AgentGatewayServer implements AgentGateway {
  readonly alpn = AGENT_ALPN;
  private readonly byEnv = new Map<string, Link[]>();
  private readonly connectors = new Map<string, buildConnector.connector>();
  private readonly admission = new AgentAdmission();
  private readonly pinger: NodeJS.Timeout;
  private readonly figures: AgentFigures;
  private readonly briefing: AgentBriefing;
  private closed = false;

  constructor(private readonly o: GatewayOptions) {
    this.briefing = new AgentBriefing(o);
    this.figures = new AgentFigures(() => [...this.byEnv.values()].flat());
    this.pinger = setInterval(() => this.ping(), o.pingMs ?? 5_000);
    this.pinger.unref();
  }

  accept(socket: TLSSocket): void {
    if (this.closed) return void socket.destroy();
    socket.on('error', () => undefined);
    const certificate = socket.getPeerCertificate();
    const fingerprint = certificate?.raw ? createHash('sha256').update(certificate.raw).digest('hex') : '';
    const agent = fingerprint ? this.o.directory.byCertificate(fingerprint) : undefined;
    if (!agent) {
      logger.warn(
        { remote: socket.remoteAddress, fingerprint: fingerprint || undefined },
        'edge: agent connection refused (no enrolled agent has this certificate)',
      );
      return void socket.destroy();
    }
    if (!this.admission.admit(agent, socket)) return void socket.destroy();
    const link = openLink(
      agent,
      socket,
      (reason) => this.admission.penalize(agent, socket, reason),
      (closed) => this.drop(closed),
    );
    const session = link.session;
    const key = envKey(agent.hubId, agent.envZId);
    this.byEnv.set(key, [...(this.byEnv.get(key) ?? []), link]);
    void this.o.presence.connected(agent.id, link.address);
    this.briefing.push(link).then(
      () => {
        link.ready = true;
        logger.info(
          {
            agentId: agent.id,
            hubId: agent.hubId,
            envZId: agent.envZId,
            remote: socket.remoteAddress,
            weight: link.weight,
            priority: link.priority,
            serves: link.serves ? [...link.serves] : 'all',
          },
          'edge: agent connected',
        );
        this.briefing.pushEdges(link);
        this.briefing.watchState(link);
      },
      (err) => {
        logger.warn({ agentId: agent.id, err: (err as Error).message }, 'edge: agent did not take its targets; connection closed');
        session.destroy();
      },
    );
  }

  private drop(link: Link): void {
    const key = envKey(link.agent.hubId, link.agent.envZId);
    const rest = (this.byEnv.get(key) ?? []).filter((l) => l !== link);
    if (rest.length) this.byEnv.set(key, rest);
    else this.byEnv.delete(key);
    void this.o.presence.disconnected(link.agent.id);
    this.figures.closing(link);
    logger.info({ agentId: link.agent.id, peakOverhead: link.floods.peak() }, 'edge: agent disconnected');
  }

  /**
   * The environments' targets changed (a share created, changed or deleted): each agent is told its new list. An
   * agent still taking its first list is told once it has taken it (push checks again when it is acknowledged).
   */
  targetsChanged(): void {
    for (const links of this.byEnv.values()) for (const link of links) if (link.ready) this.briefing.refresh(link);
  }

  /** The live edges changed: every connected agent is told. */
  edgesChanged(): void {
    for (const links of this.byEnv.values()) for (const link of links) if (link.ready) this.briefing.pushEdges(link);
  }

  /** The directory changed: connections of agents no longer enrolled close now. */
  directoryChanged(): void {
    for (const links of this.byEnv.values()) {
      for (const link of links) {
        if (this.o.directory.has(link.agent.id)) continue;
        logger.info({ agentId: link.agent.id }, 'edge: agent revoked; its connection is closed');
        link.session.destroy();
      }
    }
  }

  private ping(): void {
    for (const links of this.byEnv.values()) {
      for (const link of links) {
        if (link.pingOutstanding) {
          logger.warn({ agentId: link.agent.id }, 'edge: agent did not answer a ping; connection closed');
          link.session.destroy();
          continue;
        }
        link.pingOutstanding = true;
        try {
          link.session.ping((err) => {
            if (!err) link.pingOutstanding = false;
          });
        } catch {
          link.session.destroy();
        }
      }
    }
  }

  /** Connected agents of an environment (tests, telemetry). */
  connected(hubId: string, envZId: string): string[] {
    return (this.byEnv.get(envKey(hubId, envZId)) ?? []).filter((l) => l.ready).map((l) => l.agent.id);
  }

  connectorFor(route: ShareRoute, sticky?: Sticky): { key: string; connect: buildConnector.connector } | undefined {
    // reach 'agent' (the default of anything unknown): through agents or not at all, never directly
    if (route.reach === 'edge') return undefined;
    const key = envKey(route.hubId, route.envZId);
    // this request's agent connection, chosen now: the pools keep target connections per agent connection
    const authority = targetAuthority(route.target);
    const chosen =
      sticky && this.o.affinityKey ? this.pickSticky(route, authority, sticky, this.o.affinityKey) : this.pick(route.hubId, route.envZId, authority);
    if (typeof chosen === 'object') {
      this.figures.request(chosen.agent.id);
      chosen.connector ??= streamConnector((authority, host) => this.openStream(route.hubId, route.envZId, authority, chosen, host), this.o.connectTimeoutMs);
      return { key: `agents ${key} via ${chosen.id}`, connect: chosen.connector };
    }
    // none usable right now: the environment's connector waits for an agent taking its targets, or fails with why
    let connect = this.connectors.get(key);
    if (!connect) {
      const { hubId, envZId } = route;
      connect = streamConnector((authority, host) => this.openStream(hubId, envZId, authority, undefined, host), this.o.connectTimeoutMs);
      this.connectors.set(key, connect);
    }
    return { key: `agents ${key}`, connect };
  }

  /** Whether a connection may take a new stream at all (whatever it serves). */
  private open(link: Link, exclude?: ReadonlySet<Link>): boolean {
    return link.ready && !link.closing && !link.session.destroyed && !link.session.closed && link.streams < MAX_STREAMS_PER_CONNECTION && !exclude?.has(link);
  }

  /** The connection to carry a new stream to `authority` (edge/agents/pool.ts), or why there is none. */
  private pick(hubId: string, envZId: string, authority: string, exclude?: ReadonlySet<Link>): Link | 'none' | 'unserved' | 'down' {
    return choose(
      (this.byEnv.get(envKey(hubId, envZId)) ?? []).filter((l) => this.open(l, exclude)),
      authority,
    );
  }

  /**
   * The connection a sticky request goes to: the one its client's address hashes to, or the one its cookie names
   * (else one chosen by weight, and `sticky.setCookie` says the cookie naming it).
   */
  private pickSticky(route: ShareRoute, authority: string, sticky: Sticky, key: Buffer): Link | 'none' | 'unserved' | 'down' {
    const up = eligible(
      (this.byEnv.get(envKey(route.hubId, route.envZId)) ?? []).filter((l) => this.open(l)),
      authority,
    );
    if (typeof up === 'string') return up;
    if (sticky.affinity === 'client-ip') return byClient(up, sticky.clientIp);
    const cookie = sticky.cookie;
    // a cookie naming no usable agent of this share (foreign, unknown, gone) is ignored
    const named = cookie ? up.find((l) => names(key, route.zId, l.agent.id, cookie)) : undefined;
    if (named) return named;
    const chosen = byWeight(up);
    sticky.setCookie = affinityCookie(affinityToken(key, route.zId, chosen.agent.id), sticky.secure);
    return chosen;
  }

  /**
   * A stream to `authority` (host:port) in the environment's network, through one of its connected agents (`preferred`
   * while it is usable): the HTTP exchanges of its shares and the TCP connections of its IPsec shares. A stream the
   * agent never answered (it went away, or sent GOAWAY as it stopped after a drain) is opened again through another.
   * `host` names the target in the answer to a timeout (the share's target URL's host; the authority by default).
   */
  async openStream(hubId: string, envZId: string, authority: string, preferred?: Link, host = authority): Promise<Duplex> {
    const tried = new Set<Link>();
    let last: Unanswered | undefined;
    for (let attempt = 0; attempt < 3; attempt++) {
      let usable: Link;
      try {
        const link = preferred && attempt === 0 && this.open(preferred) ? await this.briefing.told(preferred, authority) : undefined;
        usable = link && choose([link], authority) === link ? link : await this.choose(hubId, envZId, authority, tried);
      } catch (err) {
        // no other agent to try: the reason the last one gave
        throw last ?? err;
      }
      // counted where it was chosen (connectorFor) when it was
      if (!preferred && attempt === 0) this.figures.request(usable.agent.id);
      try {
        return await connectStream(usable, authority, this.o.connectTimeoutMs, host);
      } catch (err) {
        if (err instanceof Unanswered) this.figures.error(usable.agent.id, err.kind);
        else if (isDomainError(err)) this.figures.error(usable.agent.id, err.code === 'EH_TARGET_TIMEOUT' ? 'timeout' : 'refused');
        if (!(err instanceof Unanswered)) throw err;
        last = err;
        tried.add(usable);
      }
    }
    throw last as Unanswered;
  }

  /** A usable connection for `authority`, or the error that says why there is none. */
  private async choose(hubId: string, envZId: string, authority: string, exclude: ReadonlySet<Link>): Promise<Link> {
    const links = () => this.byEnv.get(envKey(hubId, envZId)) ?? [];
    // connections not told of this target yet are told first: whether they serve it is in their answer
    const untold = links().filter((l) => this.open(l, exclude) && !l.acked.has(authority));
    if (untold.length) await Promise.all(untold.map((l) => this.briefing.told(l, authority)));
    let chosen = this.pick(hubId, envZId, authority, exclude);
    if (chosen === 'none' || chosen === 'unserved') {
      // an agent that is taking its targets right now is about to carry streams: wait for it rather than refuse
      const joining = links().filter((l) => !l.ready && l.pushing);
      if (joining.length) {
        await Promise.race(joining.map((l) => l.pushing));
        chosen = this.pick(hubId, envZId, authority, exclude);
      }
    }
    if (chosen === 'unserved') {
      // connected, but none carries this target: one of them is asked anyway, and its refusal says why (its --allow
      // patterns, or a target that is no share of its environment)
      const asked = links().find((l) => this.open(l, exclude) && !l.draining);
      if (asked) return asked;
      chosen = 'none';
    }
    if (chosen === 'down')
      throw refusal(
        'EH_TARGET_DOWN_AT_AGENTS',
        `the share's target ${authority} is down at every agent of environment ${envZId} (each reports it cannot reach it)`,
      );
    if (chosen === 'none') throw refusal('EH_NO_AGENT', `no agent connected for environment ${envZId}: the share's target is reached only through its agents`);
    return chosen;
  }

  /** No new agents; each connection finishes its open streams (at most `graceMs`) and closes. */
  async close(graceMs = 10_000): Promise<void> {
    this.closed = true;
    clearInterval(this.pinger);
    const sessions = [...this.byEnv.values()].flat().map((l) => l.session);
    await Promise.all(
      sessions.map(
        (s) =>
          new Promise<void>((resolve) => {
            if (s.destroyed) return resolve();
            s.once('close', () => resolve());
            s.close();
            setTimeout(() => s.destroy(), graceMs).unref();
          }),
      ),
    );
    await this.o.presence.close();
  }
}
