/**
 * The one-way flow of docs/architecture.md, enforced: every import (static, dynamic, type-only) of the project's
 * own code is read from the sources and checked against the rules below, so a forbidden import fails `npm test`.
 * (dependency-cruiser needs the TypeScript compiler's JavaScript API, which TypeScript 7's native build does not
 * ship; these rules are what its configuration would hold.)
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { repoRoot } from '../helpers/repo.js';

const root = repoRoot;
const SOURCES = ['api', 'workers', 'domain', 'shared', 'edge', 'scripts', 'agent'];

interface Rule {
  name: string;
  why: string;
  from: RegExp;
  to: RegExp;
  /** Known exceptions, each with the reason it stays (and the issue that removes it). */
  allow?: { from: RegExp; to: RegExp; because: string }[];
}

export const RULES: Rule[] = [
  {
    name: 'shared-is-shared',
    why: 'shared/ is used by more than one process and imports none of them, nor the domain',
    from: /^shared\//,
    to: /^(api|workers|edge|scripts|domain)\//,
    allow: [
      {
        from: /^shared\/db\.ts$/,
        to: /^domain\/models\/index\.ts$/,
        because: 'initDb() initialises every model on the one Sequelize pool of the process that connects',
      },
    ],
  },
  {
    name: 'domain-serves-the-processes',
    why: 'domain/ (commands, models, migrations, jobs) is called by the web process, the workers and the scripts, and imports none of them',
    from: /^domain\//,
    to: /^(api|workers|edge|scripts)\//,
  },
  { name: 'api-not-workers-or-edge', why: 'the web process does not reach into the workers or the edge', from: /^api\//, to: /^(workers|edge)\// },
  { name: 'workers-not-api-or-edge', why: 'workers do not reach into the web process or the edge', from: /^workers\//, to: /^(api|edge)\// },
  {
    name: 'edge-reads-only',
    why: 'the edge reads routes with plain SQL and writes only usage samples: nothing of the domain (models, commands, jobs, migrations), the API or the workers',
    from: /^edge\//,
    to: /^(api|workers|domain)\//,
  },
  {
    name: 'routes-not-models',
    why: "routes parse, call a command and present: reads and writes of the database are the commands' (models, SQL, Sequelize)",
    from: /^api\/routes\//,
    to: /^domain\/models\/|^shared\/db\.ts$|^(sequelize|pg)$/,
  },
  {
    name: 'routes-not-providers',
    why: 'routes call commands; providers are reached through commands and processors',
    from: /^api\//,
    to: /^shared\/providers\//,
  },
  {
    name: 'processors-call-commands',
    why: 'processors call commands: no models and no SQL of their own',
    from: /^workers\/processors\//,
    to: /^domain\/models\/|^shared\/db\.ts$|^(pg|sequelize)$/,
  },
  {
    name: 'providers-plain-values',
    why: 'providers take and return plain values: no models, commands or database',
    from: /^shared\/providers\//,
    to: /^domain\/|^shared\/db\.ts$/,
    allow: [
      {
        from: /^shared\/providers\/ipsec(Local|Strongswan)\.ts$/,
        to: /^shared\/db\.ts$/,
        because: "the provider's own records (ipsec_local_*: what a cloud would keep in its own database), which the IPsec data plane reports into",
      },
    ],
  },
  {
    name: 'agent-stands-alone',
    why: "agent/ is the package a user installs on another machine: Node's built-ins and its own files only, nothing of the server and no npm package",
    from: /^agent\//,
    to: /^(?!agent\/)/,
  },
  {
    name: 'server-takes-only-the-protocol',
    why: 'the server imports the agent package by its name and only what its `exports` offer: the protocol module (one definition of what edge and agent agree on, edgehub-agent/protocol), its byte pump (one carrier of TCP bytes for both, edgehub-agent/pump) and its backoff formula (edgehub-agent/backoff; the package must stay self-contained, so these live there); never a path into agent/',
    from: /^(api|workers|domain|shared|edge|scripts)\//,
    to: /^agent\//,
  },
  {
    name: 'pki-pure',
    why: 'shared/pki is pure crypto (DER, CSR, profile, names, JWT); the CA, signing keys and issuance that touch the database or the queues are commands',
    from: /^shared\/pki\//,
    to: /^domain\/|^shared\/(db|redis)\.ts$/,
  },
];

function* files(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) yield* files(full);
    else if (/\.(ts|js|mjs)$/.test(name)) yield full;
  }
}

const IMPORT = /(?:^|[\s;])(?:import|export)\s[^'"`;]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm;

/** Every import of every source file, as [importer, imported] paths relative to the root (packages by name). */
export function imports(): [string, string][] {
  const edges: [string, string][] = [];
  for (const top of SOURCES) {
    for (const file of files(path.join(root, top))) {
      const from = path.relative(root, file);
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(IMPORT)) {
        const spec = m[1] ?? m[2] ?? m[3];
        if (spec.startsWith('.')) edges.push([from, path.relative(root, path.resolve(path.dirname(file), spec)).replace(/\.js$/, '.ts')]);
        else if (!spec.startsWith('node:')) edges.push([from, spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]]);
      }
    }
  }
  return edges;
}

test('the import scan sees the imports (a self-check: the rules would pass vacuously otherwise)', (t) => {
  const edges = imports();
  t.true(edges.length > 500, `${edges.length} imports`);
  t.true(edges.some(([from, to]) => from === 'api/routes/shares.ts' && to === 'domain/commands/shares.ts'));
  t.true(edges.some(([from, to]) => from.startsWith('edge/') && to === 'undici'));
  t.true(
    edges.some(([from, to]) => from === 'agent/lib/run.js' && to === 'agent/lib/link.ts'),
    'the agent package is scanned too',
  );
  t.true(
    edges.some(([from, to]) => from === 'edge/agents/gateway.ts' && to === 'edgehub-agent'),
    'the agent package by its name',
  );
});

for (const rule of RULES) {
  test(`import rule ${rule.name}: ${rule.why}`, (t) => {
    const broken = imports().filter(([from, to]) => rule.from.test(from) && rule.to.test(to) && !rule.allow?.some((a) => a.from.test(from) && a.to.test(to)));
    t.deepEqual(
      broken.map(([from, to]) => `${from} -> ${to}`),
      [],
    );
  });
}

test('a forbidden import is caught (the checker on a made-up edge of each rule)', (t) => {
  const samples: Record<string, [string, string]> = {
    'shared-is-shared': ['shared/x.ts', 'domain/commands/shares.ts'],
    'domain-serves-the-processes': ['domain/commands/x.ts', 'api/app.ts'],
    'api-not-workers-or-edge': ['api/routes/x.ts', 'workers/runner.ts'],
    'workers-not-api-or-edge': ['workers/x.ts', 'api/app.ts'],
    'edge-reads-only': ['edge/x.ts', 'domain/models/Share.ts'],
    'routes-not-models': ['api/routes/x.ts', 'domain/models/Share.ts'],
    'routes-not-providers': ['api/routes/x.ts', 'shared/providers/ipsec.ts'],
    'processors-call-commands': ['workers/processors/x.ts', 'sequelize'],
    'providers-plain-values': ['shared/providers/x.ts', 'domain/models/Hub.ts'],
    'pki-pure': ['shared/pki/csr.ts', 'domain/jobs/queues.ts'],
    'agent-stands-alone': ['agent/lib/share.js', 'shared/config.ts'],
    'server-takes-only-the-protocol': ['edge/agents/gateway.ts', 'agent/lib/run.ts'],
  };
  for (const rule of RULES) {
    const [from, to] = samples[rule.name];
    t.true(rule.from.test(from) && rule.to.test(to) && !rule.allow?.some((a) => a.from.test(from) && a.to.test(to)), rule.name);
  }
});

test('every route, processor, schedule and model file is listed in its registry (the wiring is explicit imports)', (t) => {
  const missing: string[] = [];
  for (const dir of ['api/routes', 'workers/processors', 'workers/schedules', 'domain/models']) {
    const registry = readFileSync(path.join(root, dir, 'index.ts'), 'utf8');
    for (const name of readdirSync(path.join(root, dir))) {
      const base = name.replace(/\.ts$/, '');
      if (base === name || base === 'index') continue;
      if (!registry.includes(`'./${base}.js'`)) missing.push(`${dir}/${name}`);
    }
  }
  t.deepEqual(missing, []);
});

/** The import circles among `files`: each a group of files that import each other, directly or through the others. */
function importCircles(edges: [string, string][], within: RegExp): string[][] {
  const next = new Map<string, string[]>();
  for (const [from, to] of edges) if (within.test(from) && within.test(to)) next.set(from, [...(next.get(from) ?? []), to]);
  // Tarjan's strongly connected components: a component of more than one file, or a file importing itself, is a circle
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const circles: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      group.push(w);
    } while (w !== v);
    if (group.length > 1 || next.get(v)?.includes(v)) circles.push(group.sort());
  };
  for (const v of next.keys()) if (!index.has(v)) visit(v);
  return circles;
}

test('no import circle among the edge files (type-only imports count: a reader follows them too)', (t) => {
  t.deepEqual(importCircles(imports(), /^edge\//), []);
});

test('an import circle is caught (the checker on made-up imports)', (t) => {
  const circles = importCircles(
    [
      ['edge/a.ts', 'edge/b.ts'],
      ['edge/b.ts', 'edge/c.ts'],
      ['edge/c.ts', 'edge/a.ts'],
      ['edge/c.ts', 'edge/d.ts'],
      ['edge/e.ts', 'edge/e.ts'],
    ],
    /^edge\//,
  );
  t.deepEqual(circles, [['edge/a.ts', 'edge/b.ts', 'edge/c.ts'], ['edge/e.ts']]);
});
