/**
 * Keeps a store that `npm start` runs (PostgreSQL, redis-server) up. When its process exits while the service runs
 * (a crash, the OOM killer, a kill by hand), it is started again on the same port with the same data, after a delay
 * that doubles while it keeps dying (1 s to 30 s; back to 1 s once it stayed up for a minute). The service's
 * processes reconnect on their own, as after any outage of a store.
 */
import type { ChildProcess } from 'node:child_process';
import { backoffMs } from '../../shared/backoff.js';

interface KeptStore {
  process: ChildProcess;
  stop(): Promise<void>;
}

const MIN_DELAY_MS = 1000;
const MAX_DELAY_MS = 30_000;
const STABLE_MS = 60_000;

export function keepUp<T extends KeptStore>(
  name: string,
  first: T,
  startAgain: () => Promise<T>,
  options: { stopping(): boolean; log(line: string): void; started(store: T): void },
): void {
  let failures = 0;
  const watch = (store: T, since: number) => {
    store.process.once('exit', (code, signal) => {
      if (options.stopping()) return;
      if (Date.now() - since >= STABLE_MS) failures = 0;
      void again(`${name} (pid ${store.process.pid}) exited with ${signal ? `signal ${signal}` : `code ${code}`}`);
    });
  };
  const again = async (why: string) => {
    const delay = backoffMs(++failures, { minMs: MIN_DELAY_MS, maxMs: MAX_DELAY_MS });
    options.log(`edgehub: ${why}; starting it again in ${(delay / 1000).toFixed(0)} s`);
    await new Promise((resolve) => setTimeout(resolve, delay));
    if (options.stopping()) return;
    let store: T;
    try {
      store = await startAgain();
    } catch (err) {
      return again(`${name} did not start again (${err instanceof Error ? err.message.split('\n')[0] : String(err)})`);
    }
    // the service began to stop while it started: it is not kept
    if (options.stopping()) return void (await store.stop());
    options.started(store);
    options.log(`edgehub: ${name} started again (pid ${store.process.pid})`);
    watch(store, Date.now());
  };
  watch(first, Date.now());
}
