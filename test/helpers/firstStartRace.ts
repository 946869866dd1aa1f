/**
 * First-start race, for test/system/first-start.test.ts: `node --import tsx test/helpers/firstStartRace.ts <dir> <rounds>`
 * runs 4 threads that, in each round, meet at a barrier and then all load the configuration from the same fresh data
 * folder (so all try to create the admin token and the secret key at the same instant). Prints one JSON line:
 * rounds in which the threads disagreed, read an empty value, or failed.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { loadConfig } from '../../shared/config.js';

const THREADS = 4;

interface Shared {
  dir: string;
  rounds: number;
  barrier: SharedArrayBuffer;
}

/** A reusable barrier: [arrived, generation]. */
function wait(state: Int32Array, parties: number): void {
  const generation = Atomics.load(state, 1);
  if (Atomics.add(state, 0, 1) + 1 === parties) {
    Atomics.store(state, 0, 0);
    Atomics.add(state, 1, 1);
    Atomics.notify(state, 1);
  } else {
    while (Atomics.load(state, 1) === generation) Atomics.wait(state, 1, generation, 50);
  }
}

if (isMainThread) {
  const [dir, roundsText] = process.argv.slice(2);
  const rounds = Number(roundsText ?? 200);
  const barrier = new SharedArrayBuffer(8);
  const results = await Promise.all(
    Array.from({ length: THREADS }, () => {
      // worker threads do not inherit tsx's loader: register it in the thread, then load this file there
      const boot = `(async () => { (await import('tsx/esm/api')).register(); await import(${JSON.stringify(import.meta.url)}); })()`;
      const w = new Worker(boot, { eval: true, workerData: { dir, rounds, barrier } satisfies Shared });
      return new Promise<string[]>((resolve, reject) => {
        w.once('message', resolve);
        w.once('error', reject);
      });
    }),
  );
  let bad = 0;
  const examples: string[] = [];
  for (let r = 0; r < rounds; r++) {
    const seen = new Set(results.map((perThread) => perThread[r]));
    const broken = seen.size !== 1 || [...seen].some((v) => v.startsWith('error') || v.startsWith('|') || v.endsWith('|'));
    if (broken) {
      bad++;
      if (examples.length < 3) examples.push([...seen].join(' / '));
    }
  }
  console.log(JSON.stringify({ rounds, bad, examples }));
} else {
  const { dir, rounds, barrier } = workerData as Shared;
  const state = new Int32Array(barrier);
  const out: string[] = [];
  for (let r = 0; r < rounds; r++) {
    const dataDir = path.join(dir, `round-${r}`);
    mkdirSync(dataDir, { recursive: true });
    wait(state, THREADS);
    try {
      const c = loadConfig({ HUB_DATA_DIR: dataDir });
      out.push(`${c.adminToken}|${c.secretKey.toString('hex')}`);
    } catch (err) {
      out.push(`error ${(err as Error).message.split('\n').join(' ')}`);
    }
  }
  parentPort!.postMessage(out);
}
