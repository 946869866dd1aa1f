/** The parts of the edge the admission steps use, built once by startEdge (edge/server.ts). */
import type { SecureContext } from 'node:tls';
import type { AccessControl } from '../access/types.js';
import type { Capture } from '../inspect/capture.js';
import type { HubLimiter } from './limits.js';
import type { Meter } from '../meter.js';
import type { PolicyGate } from '../policy/gate.js';
import type { Proxy } from '../upstream/proxy.js';
import type { OpenConnections } from '../revocation.js';
import type { RouteTable } from '../state/routes.js';
import type { TcpUpstream } from '../upstream/tcp.js';

export interface PipelineParts {
  routes: RouteTable;
  access: AccessControl;
  limiter: HubLimiter;
  connections: OpenConnections;
  proxy: Proxy;
  meter: Meter;
  /** This edge's hop mark (loops are refused). */
  mark: string;
  /** Records the exchanges of shares with `inspect`, the edge's refusals included (edge/inspect/capture.ts). */
  capture?: Capture;
  /** Shares' traffic policies (edge/policy), judged before their other access rules. */
  gate: PolicyGate;
}

/** The parts the steps of a TCP share's connection use (steps.ts `connectionSteps`). */
export interface ConnectionParts {
  access: AccessControl;
  meter: Meter;
  /** Open connections per share on this process; more are closed at once (HUB_EDGE_TCP_MAX_CONNECTIONS). */
  maxConnections: number;
  /** The TLS context for a server name (edge/front/tls.ts). */
  contextFor(servername: string): SecureContext | undefined;
  /** Carries a connection's bytes to its share's target (edge/upstream/tcp.ts). */
  upstream: TcpUpstream;
}
