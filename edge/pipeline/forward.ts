/** Step 8: the hand-over to the proxy (edge/upstream/proxy.ts): the target's answer, or the upgraded connection spliced. */
import type { Step } from './exchange.js';

export const forward = (): Step => (x) => {
  x.forward();
  return undefined;
};
