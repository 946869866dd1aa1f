/**
 * A TCP connection's step 3: the share policy's IP rules (edge/policy/compile.ts, as the policy step judges a request)
 * on the connection's address; a refusal is counted by the run (edge_policy_refusals_total, reason "ip"), as a
 * request's is.
 */
import { ipAdmits } from '../policy/compile.js';
import { addressDenied } from '../policy/gate.js';
import type { StepOf } from './exchange.js';
import type { TcpExchange } from './tcpExchange.js';

export const ipRules = (): StepOf<TcpExchange> => (x) => {
  const policy = x.route!.policy;
  if (!policy || !(policy.allow || policy.deny)) return undefined;
  const address = x.connection.remoteAddress ?? '';
  return ipAdmits(policy, address) ? undefined : addressDenied(address);
};
