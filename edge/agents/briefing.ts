/**
 * What the gateway (edge/agents/gateway.ts) tells each connected agent and what it hears back: the targets of its
 * environment's shares with their HTTP checks (PUT /edgehub/v1/targets), again whenever they change or before a
 * stream to a target it was not told of yet; the live edges; and the agent's own state (what it serves, its weight,
 * priority, draining and targets down), from its answers and its state stream, written for the API (presence).
 */
import { logger } from '../../shared/logger.js';
import type { Link } from './link.js';
import { sendEdges, sendTargets } from './messages.js';
import { applyState, readStateStream } from './pool.js';
import type { Presence } from './presence.js';

export interface BriefingOptions {
  presence: Presence;
  /** `host:port` of every target of the environment's shares. */
  targetsOf(hubId: string, envZId: string): string[];
  /** How long a stream to a target may take to open (agent connects to the target); a list waits as long. */
  connectTimeoutMs: number;
  /** The live edges' agent addresses and this edge's own, told to every connected agent (edge/agents/liveEdges.ts). */
  edges?: () => { addresses: string[]; self: string[] };
  /** The environment's shares with their targets (host:port): what targets reported down are shown as. */
  sharesOf?: (hubId: string, envZId: string) => { zId: string; authority: string }[];
  /** The HTTP checks of a hub's targets (edge/agents/checks.ts), sent with the targets. */
  checksOf?: (hubId: string, targets: string[]) => Record<string, unknown>;
}

export class AgentBriefing {
  constructor(private readonly o: BriefingOptions) {}

  /** Sends the environment's targets; resolves once the agent acknowledged them. */
  push(link: Link): Promise<void> {
    const targets = [...new Set(this.o.targetsOf(link.agent.hubId, link.agent.envZId))].sort();
    const checks = JSON.stringify(this.o.checksOf?.(link.agent.hubId, targets) ?? {});
    const sending = sendTargets(link, targets, checks, this.o.connectTimeoutMs).then((answer) => {
      link.ackedChecks = checks;
      this.takeAnswer(link, targets, answer);
      // a change while this list was on its way (a share made as the agent connected) was not sent: send it now
      setImmediate(() => {
        if (!link.session.destroyed && !link.session.closed) this.refresh(link);
      });
    });
    // waiters see the outcome in link.acked; the rejection is the caller's
    const settled = sending.then(
      () => undefined,
      () => undefined,
    );
    link.pushing = settled;
    void settled.then(() => {
      if (link.pushing === settled) link.pushing = undefined;
    });
    return sending;
  }

  /** The agent took `targets`; `body` its answer (what it serves, its pool state), undefined from an older agent. */
  private takeAnswer(link: Link, targets: string[], body: string | undefined): void {
    link.acked = new Set(targets);
    if (body !== undefined) {
      let said: unknown;
      try {
        said = JSON.parse(body);
      } catch {
        said = undefined;
      }
      this.applyState(link, said);
    }
    // the agent took its targets (and says it is connected): it carries streams from now on
    link.ready = true;
  }

  /** What the agent said of itself, checked (edge/agents/pool.ts), and written for the API. */
  private applyState(link: Link, said: unknown): void {
    const wasDraining = link.draining;
    const foreign = applyState(link, said, link.acked);
    if (foreign.length)
      logger.warn(
        { agentId: link.agent.id, envZId: link.agent.envZId, targets: foreign.slice(0, 10) },
        "edge: agent reported targets down that are not its environment's; ignored",
      );
    if (link.draining && !wasDraining) logger.info({ agentId: link.agent.id, envZId: link.agent.envZId }, 'edge: agent draining; it is sent nothing new');
    const down = new Set(link.down);
    const targetsDown = (this.o.sharesOf?.(link.agent.hubId, link.agent.envZId) ?? []).filter((s) => down.has(s.authority)).map((s) => s.zId);
    void this.o.presence.state(link.agent.id, {
      weight: link.weight,
      priority: link.priority,
      draining: link.draining,
      targetsDown: [...new Set(targetsDown)].sort(),
    });
  }

  /** Reads the agent's state stream (one JSON line per change) for as long as the connection lasts. */
  watchState(link: Link): void {
    readStateStream(link, (said) => this.applyState(link, said));
  }

  /** Sends a link its targets again when they are not the ones it acknowledged. */
  refresh(link: Link): void {
    const now = new Set(this.o.targetsOf(link.agent.hubId, link.agent.envZId));
    const checks = JSON.stringify(this.o.checksOf?.(link.agent.hubId, [...now].sort()) ?? {});
    if (now.size === link.acked.size && [...now].every((t) => link.acked.has(t)) && checks === link.ackedChecks) return;
    void this.push(link).catch((err) => {
      // an agent that is going away (its connection closed meanwhile) needs no list: said, not warned
      const gone = link.session.destroyed || link.session.closed;
      logger[gone ? 'info' : 'warn']({ agentId: link.agent.id, err: (err as Error).message }, 'edge: agent targets not updated');
    });
  }

  /**
   * Tells the agent the live edges (and which addresses are this edge's own), so that it dials every edge. An agent
   * that does not know the message answers 404; it keeps the edges it was given.
   */
  pushEdges(link: Link): void {
    const edges = this.o.edges?.();
    // not read yet (this edge is starting): nothing rather than an empty set, which would drop the edges it found
    if (edges?.addresses.length) sendEdges(link, edges);
  }

  /** The link, once it has been told `authority` when it is a target it was not told of yet (a share made a moment ago). */
  async told(link: Link, authority: string): Promise<Link> {
    if (link.acked.has(authority)) return link;
    if (link.pushing) await link.pushing;
    if (!link.acked.has(authority)) await this.push(link).catch(() => undefined);
    return link;
  }
}
