/**
 * The edge's admission pipeline: the ordered steps every request passes before it reaches its target, the same for an
 * HTTP/1.1 request, an HTTP/2 stream and an upgrade, and the shorter list a TCP share's connection passes (no request:
 * nothing of login, basic auth or error pages applies to bytes). dispatch.ts makes the exchange, run.ts runs the
 * steps. Each step is a file of its own with one interface (exchange.ts `StepOf`); docs/architecture.md has the table.
 */
import { admission } from './admission.js';
import { connectionBound } from './connectionBound.js';
import type { Step, StepOf } from './exchange.js';
import { forward } from './forward.js';
import { identityRate } from './identityRate.js';
import { ipRules } from './ipRules.js';
import { login } from './login.js';
import { malformed } from './malformed.js';
import { mutualTls } from './mutualTls.js';
import type { ConnectionParts, PipelineParts } from './parts.js';
import { policy } from './policy.js';
import { portRouted } from './portRouted.js';
import { routed } from './routed.js';
import type { TcpExchange } from './tcpExchange.js';
import { tcpMutualTls } from './tcpMutualTls.js';

export const admissionSteps = (parts: PipelineParts): readonly Step[] => [
  malformed(parts), // 400 / 508: a request unfit to route, or one looping back (edge/pipeline/refusals.ts)
  routed(), // 404: no share at the host (edge/state/routes.ts)
  policy(parts), // the share's IP rules, rate limit, basic auth, maintenance (edge/policy/gate.ts)
  mutualTls(parts), // a client certificate of the share's hub (edge/access/mutualTls.ts)
  admission(), // 503: the hub's requests in progress on this edge (edge/pipeline/limits.ts)
  login(parts), // a login session (edge/access/login); the revocation watch from here (edge/revocation.ts)
  identityRate(parts), // a rate limit by the identity verified above (edge/policy/gate.ts)
  forward(), // the proxy (edge/upstream/proxy.ts)
];

export const connectionSteps = (parts: ConnectionParts): readonly StepOf<TcpExchange>[] => [
  portRouted(), // the share the port was opened for (edge/tcp/shares.ts)
  connectionBound(parts), // closed: the share's open connections on this process (HUB_EDGE_TCP_MAX_CONNECTIONS)
  ipRules(), // reset: the share policy's IP rules (edge/policy/compile.ts), counted as a request's
  tcpMutualTls(parts), // closed: TLS with the share host's certificate, a client certificate of the share's hub
  forward(), // the bytes carried to the target (edge/upstream/tcp.ts)
];
