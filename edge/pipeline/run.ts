/**
 * Runs the admission steps (edge/pipeline/steps.ts) on one exchange, in order, the same way for every entry point (a
 * request, an upgrade, a TCP connection): each step's synchronous verdict at once, a promised one when it comes
 * (unless the client left meanwhile). A refusal is answered and ends the run (a share policy's counted by reason); a
 * step that fails to decide closes the exchange.
 */
import { logger } from '../../shared/logger.js';
import { observePolicyRefusal } from '../telemetry.js';
import { type Entry, HANDLED, type StepOf, type Verdict } from './exchange.js';

export function run<X extends Entry>(x: X, steps: readonly StepOf<X>[], from = 0): void {
  for (let i = from; i < steps.length; i++) {
    const verdict = steps[i](x);
    if (verdict === undefined) continue;
    // a step that fails to decide, or one after it that throws once the run goes on, closes the exchange
    if (verdict instanceof Promise) return void verdict.then((v) => resumed(x, steps, i + 1, v)).catch((err) => failed(x, err));
    return stop(x, verdict);
  }
}

function resumed<X extends Entry>(x: X, steps: readonly StepOf<X>[], next: number, verdict: Verdict): void {
  if (x.gone()) return;
  if (verdict === undefined) return run(x, steps, next);
  stop(x, verdict);
}

function failed(x: Entry, err: unknown): void {
  logger.error({ err: (err as Error).message }, 'edge: share policy not judged');
  x.fail();
}

function stop(x: Entry, verdict: Exclude<Verdict, undefined>): void {
  if (verdict === HANDLED) return;
  if (verdict.reason) observePolicyRefusal(x.route!.zId, verdict.reason);
  x.refuse(verdict);
}
