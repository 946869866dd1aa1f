/**
 * The cost of reading JSON bodies strictly (api/middleware/strictJson.ts): a 1 MiB body of usage samples (keys,
 * numbers, ISO dates, non-ASCII text) parsed by the strict reader against the plain read it replaced (UTF-8 decode +
 * JSON.parse), alternating body by body in one process. Prints the median CPU ms per body of each and the ratio (strict / plain).
 */
import { parseStrictJson } from '../api/middleware/strictJson.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS || 5);
const REPS = Number(process.env.BENCH_REPS || 40);

const samples: unknown[] = [];
let text = '';
for (let i = 0; ; i++) {
  samples.push({
    hubId: `6f1c2a3e-1111-4222-8333-${String(i).padStart(12, '0')}`,
    shareId: `s${i}`,
    rx: i * 7,
    tx: i * 3,
    timestamp: new Date(1_795_000_000_000 + i).toISOString(),
    note: 'café \u{1F600}',
  });
  if (i % 100 === 0 && (text = JSON.stringify({ samples })).length > 1024 * 1024 - 200) break;
}
const body = Buffer.from(text);

/** One body through `run`: the CPU time it took, in ms (not wall time, which other processes' load inflates). */
function once(run: () => unknown): number {
  const start = process.cpuUsage();
  run();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}
/** REPS bodies through each, one after the other (so load from elsewhere falls on both alike); the median of each. */
function pair(): [number, number] {
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < REPS; i++) {
    a.push(once(plain));
    b.push(once(strict));
  }
  const median = (xs: number[]) => xs.sort((x, y) => x - y)[xs.length >> 1];
  return [median(a), median(b)];
}
const plain = () => JSON.parse(body.toString('utf8'));
const strict = () => parseStrictJson(body);
for (let i = 0; i < 5; i++) plain(), strict(); // warm both

const ratios: number[] = [];
console.log(`body: ${(body.length / 1024 / 1024).toFixed(2)} MiB, ${samples.length} samples`);
for (let round = 1; round <= ROUNDS; round++) {
  const [a, b] = pair();
  ratios.push(b / a);
  console.log(`round ${round}: plain ${a.toFixed(2)} ms, strict ${b.toFixed(2)} ms, ratio ${(b / a).toFixed(2)}`);
}
ratios.sort((x, y) => x - y);
console.log(`median ratio strict / plain: ${ratios[Math.floor(ratios.length / 2)].toFixed(2)}`);
