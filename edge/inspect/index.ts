/**
 * Request inspection on this edge: the capture of inspected shares'
 * exchanges and the replays this edge takes, on two Redis connections of their own (one blocks on the replay list).
 */
import { config } from '../../shared/config.js';
import { createRedis } from '../../shared/redis.js';
import type { Meter } from '../meter.js';
import type { ShareRoute } from '../types.js';
import type { UpstreamPools } from '../upstream/upstream.js';
import { Capture } from './capture.js';
import { Replays } from './replay.js';

export interface Inspection {
  capture: Capture;
  replays: Replays;
  stop(): Promise<void>;
}

export function startInspection(options: {
  edge: string;
  routeOf: (zId: string) => ShareRoute | undefined;
  pools: UpstreamPools;
  meter: Meter;
  via: string;
}): Inspection {
  const cfg = config();
  const redis = createRedis('producer');
  const blocking = createRedis('worker');
  const capture = new Capture({ redis, prefix: cfg.queuePrefix, limits: cfg.inspect, edge: options.edge });
  const replays = new Replays({
    blocking,
    redis,
    prefix: cfg.queuePrefix,
    capture,
    routeOf: options.routeOf,
    pools: options.pools,
    meter: options.meter,
    via: options.via,
    concurrency: cfg.inspect.replays,
    perHub: cfg.inspect.replaysPerHub,
  });
  replays.start();
  return {
    capture,
    replays,
    async stop() {
      await replays.stop();
      await capture.flushed();
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
