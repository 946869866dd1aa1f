/**
 * Every job processor, one import each: a module default-exports one definition or several, and may export
 * `onWorkerStart` (set-up a worker needs before its first job, e.g. the root CA). A new job family adds its file here.
 */
import type { ProcessorDefinition } from '../processor.js';
import * as agents from './agents.js';
import * as cleanup from './cleanup.js';
import * as frontends from './frontends.js';
import * as healthChecks from './healthChecks.js';
import * as ipsec from './ipsec.js';
import * as metrics from './metrics.js';
import * as pki from './pki.js';
import * as shares from './shares.js';

interface ProcessorModule {
  default: ProcessorDefinition | ProcessorDefinition[];
  onWorkerStart?: () => Promise<void>;
}

const modules: ProcessorModule[] = [agents, cleanup, frontends, healthChecks, ipsec, metrics, pki, shares];

export const processors: ProcessorDefinition[] = modules.flatMap((m) => (Array.isArray(m.default) ? m.default : [m.default]));

/** Runs each processor module's `onWorkerStart`. */
export async function runWorkerStartHooks(): Promise<void> {
  for (const m of modules) await m.onWorkerStart?.();
}
