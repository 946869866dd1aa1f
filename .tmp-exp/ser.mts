import { presentSparklines, sparklinesJson } from '../api/presenters/metrics.ts';
const w: any = { period: 'P1D' };
const ts = Array.from({ length: 24 }, (_, i) => new Date(1795300000000 + i * 3600000).toISOString());
const lines = Array.from({ length: 1000 }, (_, n) => ({ scope: 'share', id: 'shr' + n.toString(36).padStart(10, 'x'), samples: ts.map((t, i) => ({ rx: (n * 7919 + i * 104729) % 1e9, tx: n * 31 + i, timestamp: t })) }));
const pg = { page: 0, size: 1000, total: 1000, cap: 1000 };
for (let r = 0; r < 3; r++) {
  let t = performance.now(); for (let i = 0; i < 20; i++) JSON.stringify(presentSparklines('h', w, lines, pg)); const a = (performance.now() - t) / 20;
  t = performance.now(); for (let i = 0; i < 20; i++) Buffer.from(sparklinesJson('h', w, lines, pg)); const b = (performance.now() - t) / 20;
  t = performance.now(); for (let i = 0; i < 20; i++) Buffer.from(JSON.stringify(presentSparklines('h', w, lines, pg))); const c = (performance.now() - t) / 20;
  console.log(`stringify ${a.toFixed(2)} ms, stringify+buffer ${c.toFixed(2)}, manual+buffer ${b.toFixed(2)} ms`);
}
