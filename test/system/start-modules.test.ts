import { spawnSync } from 'node:child_process';
import test from 'ava';

/**
 * What a process loads when it starts. The queue UI (bull-board) and the certificate issuers' libraries (acme-client,
 * @peculiar/x509, with axios and a DI container) are loaded on first use, not at every start of the API, the worker,
 * the clock or the edge: together they were about a third of the API's and the worker's module-loading CPU. Each entry
 * is imported in a fresh process (its main part runs only when it is the process's entry point), and the packages
 * it loaded are read from Node's module cache; the process then loads the lazy modules itself, to show that the check
 * sees them when they are there.
 */
const LAZY = ['@bull-board/', 'acme-client', '@peculiar/x509'];

const loadedPackages = (keys: string[]) => LAZY.filter((name) => keys.some((k) => k.includes(`/node_modules/${name}`)));

for (const entry of ['api/server.ts', 'workers/index.ts', 'workers/clock.ts', 'edge/index.ts']) {
  test(`${entry} starts without ${LAZY.join(', ')}; they load on first use`, (t) => {
    const script = `
      import { createRequire } from 'node:module';
      const cache = () => Object.keys(createRequire(import.meta.url).cache);
      await import('./${entry}');
      const atStart = cache();
      await import('./shared/providers/certificateIssuerAcme.ts');
      await import('@bull-board/koa');
      console.log(JSON.stringify({ atStart, afterUse: cache() }));
      process.exit(0);
    `;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      env: { ...process.env, LOG_LEVEL: 'silent' },
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    t.is(child.status, 0, child.stderr);
    const { atStart, afterUse } = JSON.parse(child.stdout.trim().split('\n').pop() as string) as { atStart: string[]; afterUse: string[] };
    t.deepEqual(loadedPackages(atStart), []);
    t.deepEqual(loadedPackages(afterUse), LAZY);
  });
}
