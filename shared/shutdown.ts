import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { logger } from './logger.js';

/**
 * Runs `stop` once on SIGTERM, SIGINT or SIGHUP (stop accepting, finish work, close pools), then exits: SIGHUP is
 * the terminal that ran `npm start` closing, which must not cut the edge's last counters or a job short. A second signal, or
 * a stop that takes longer than `graceMs`, exits at once.
 *
 * Under a supervisor (an IPC channel to the parent: `npm start`'s, or the edge's primary) a signal that comes while
 * stopping is not a second request: a terminal's Ctrl-C reaches the whole process group, this process and its
 * supervisor alike, and the supervisor then asks as well. The supervisor forces what takes too long, and this
 * process exits when its supervisor does (the cluster channel closes), so a second Ctrl-C still ends everything.
 */
export function onShutdown(stop: () => Promise<void>, graceMs = 25_000): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) {
      if (process.connected) return;
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      logger.warn('shutdown took too long; exiting');
      process.exit(1);
    }, graceMs);
    timer.unref();
    stop()
      .then(() => process.exit(0))
      .catch((err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  process.on('SIGHUP', handler);
  // `npm start`'s supervisor asks by message (shared/supervisor.ts): the same as SIGTERM, but never a second signal
  process.on('message', (message) => {
    if (message === 'edgehub:shutdown' && !stopping) handler('SIGTERM');
  });
}

/**
 * True when the module with this `import.meta.url` is the script node was started with. Node loads the script from
 * its real path (links followed) but leaves `process.argv[1]` as given, so both are compared as real paths.
 */
export function isMain(moduleUrl: string): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  let real: string;
  try {
    real = realpathSync(script);
  } catch {
    return false;
  }
  return moduleUrl === pathToFileURL(real).href;
}
