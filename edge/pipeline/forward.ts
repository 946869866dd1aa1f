/**
 * Step 8: the hand-over to the target side: the proxy (edge/upstream/proxy.ts) for the target's answer or the upgraded
 * connection spliced; a TCP connection's bytes carried (edge/upstream/tcp.ts).
 */
import type { Entry, StepOf } from './exchange.js';

export const forward = (): StepOf<Entry> => (x) => {
  x.forward();
  return undefined;
};
