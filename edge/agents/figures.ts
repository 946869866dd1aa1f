/**
 * Per-agent figures in Prometheus (shared/telemetry/edge.ts): requests sent through each agent, bytes on the edge's
 * connections with it, and streams through it that reached no target. Counted into plain numbers as they happen and
 * moved into the counters when the series are scraped (as edge/telemetry.ts does), bytes read off each connection's
 * socket then (what it carried since the last scrape).
 */
import type { Socket } from 'node:net';
import { edgeAgentBytesTotal, edgeAgentErrorsTotal, edgeAgentRequestsTotal, onScrape } from '../../shared/telemetry/index.js';

interface Counted {
  agent: { id: string };
  socket: Socket;
  /** The socket's byte counts at the last scrape. */
  seen: { read: number; written: number };
}

export class AgentFigures {
  private readonly requests = new Map<string, number>();
  private readonly errors = new Map<string, number>();
  /** Connections closed since the last scrape: their last bytes still count. */
  private readonly closed: Counted[] = [];

  constructor(private readonly links: () => Iterable<Counted>) {
    onScrape('agents', () => this.report());
  }

  request(agentId: string): void {
    this.requests.set(agentId, (this.requests.get(agentId) ?? 0) + 1);
  }

  error(agentId: string, kind: 'unanswered' | 'unreachable' | 'refused' | 'timeout'): void {
    const key = `${agentId}\n${kind}`;
    this.errors.set(key, (this.errors.get(key) ?? 0) + 1);
  }

  /** A connection closes: its bytes since the last scrape are reported with the next one. */
  closing(link: Counted): void {
    this.closed.push(link);
  }

  report(): void {
    for (const [agent, n] of this.requests) edgeAgentRequestsTotal.inc({ agent }, n);
    this.requests.clear();
    for (const [key, n] of this.errors) {
      const [agent, kind] = key.split('\n');
      edgeAgentErrorsTotal.inc({ agent, kind }, n);
    }
    this.errors.clear();
    for (const link of [...this.links(), ...this.closed.splice(0)]) {
      const read = link.socket.bytesRead;
      const written = link.socket.bytesWritten;
      if (written > link.seen.written) edgeAgentBytesTotal.inc({ agent: link.agent.id, direction: 'to_agent' }, written - link.seen.written);
      if (read > link.seen.read) edgeAgentBytesTotal.inc({ agent: link.agent.id, direction: 'from_agent' }, read - link.seen.read);
      link.seen = { read, written };
    }
  }
}
