import { spawnSync } from 'node:child_process';
import test from 'ava';

/**
 * stdout logging gathers lines into 64 KiB chunks (sonic-boom's minLength, shared/logger.ts). A process that logs lines of every
 * size (multi-byte UTF-8, lines that cross chunk boundaries, one larger than a chunk) and exits at once: every line
 * reaches stdout whole, once, in order.
 */
test('log lines reach stdout whole and in order across chunks, multi-byte text and a line larger than a chunk', (t) => {
  const script = `
    const { logger } = await import('./shared/logger.ts');
    for (let i = 0; i < 3000; i++) logger.info({ i, text: i % 7 === 0 ? 'ünïcødé ✓ 日本語 '.repeat(i % 50) : 'x'.repeat(i % 300) }, 'line');
    logger.info({ i: 3000, text: 'é'.repeat(100000) }, 'line');
    for (let i = 3001; i < 3100; i++) logger.info({ i, text: 'tail' }, 'line');
    process.exit(0);
  `;
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: { ...process.env, LOG_LEVEL: 'info', HUB_LOG_DIR: '' },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  t.is(child.status, 0, child.stderr);
  const lines = child.stdout.split('\n').filter((l) => l.includes('"msg":"line"'));
  t.is(lines.length, 3100);
  lines.forEach((line, i) => {
    const entry = JSON.parse(line);
    t.is(entry.i, i);
    const expected = i === 3000 ? 'é'.repeat(100000) : i > 3000 ? 'tail' : i % 7 === 0 ? 'ünïcødé ✓ 日本語 '.repeat(i % 50) : 'x'.repeat(i % 300);
    if (entry.text !== expected) t.fail(`line ${i} changed`);
  });
});

/**
 * The access line (shared/logger.ts logAccess, a pino child logger without the redaction pass): it must be the line
 * pino writes for the same fields, key for key and in the same order, valid JSON for any path, on stdout and in the
 * log file (HUB_LOG_DIR) alike. Requests go through a Koa app with requestEdge over HTTP in a child process.
 */
test('an access line is the JSON line pino writes for the same fields, on stdout and in the log file', async (t) => {
  const { mkdtempSync, readdirSync, readFileSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const path = await import('node:path');
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? tmpdir(), 'access-log-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const script = `
    const Koa = (await import('koa')).default;
    const { requestEdge } = await import('./api/middleware/requestEdge.ts');
    const { logger } = await import('./shared/logger.ts');
    const app = new Koa();
    app.silent = true;
    app.use(requestEdge);
    app.use(async (ctx) => { if (ctx.path.startsWith('/ok')) ctx.body = { ok: true }; });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const base = 'http://127.0.0.1:' + server.address().port;
    await fetch(base + '/ok', { headers: { 'x-request-id': 'given-id.1' } });
    await fetch(base + '/ok/%22quoted%22/%5Cback/%C3%BCmlaut');
    await fetch(base + '/missing', { method: 'DELETE' });
    logger.info({ reqId: 'r', method: 'GET', path: '/p', status: 200, ms: 1.5 }, 'request');
    server.close();
    process.exit(0);
  `;
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: { ...process.env, LOG_LEVEL: 'info', HUB_LOG_DIR: dir, HUB_LOG_FILE_LEVEL: 'info', HUB_PROCESS: 'web' },
    encoding: 'utf8',
  });
  t.is(child.status, 0, child.stderr);
  const fileText = readFileSync(path.join(dir, readdirSync(dir)[0]!), 'utf8');
  for (const [where, text] of [
    ['stdout', child.stdout],
    ['file', fileText],
  ] as const) {
    const entries = text
      .split('\n')
      .filter((l) => l.includes('"msg":"request"'))
      .map((l) => JSON.parse(l));
    t.is(entries.length, 4, where);
    const [given, quoted, missing, viaPino] = entries;
    t.deepEqual(Object.keys(given), Object.keys(viaPino), `${where}: the same keys in the same order as pino's line`);
    t.like(given, { level: 30, pid: child.pid, proc: 'web', reqId: 'given-id.1', method: 'GET', path: '/ok', status: 200, msg: 'request' });
    t.is(typeof given.time, 'number');
    t.is(typeof given.ms, 'number');
    t.is(quoted.path, '/ok/%22quoted%22/%5Cback/%C3%BCmlaut');
    t.regex(quoted.reqId, /^[0-9a-f-]{36}$/);
    t.like(missing, { method: 'DELETE', path: '/missing', status: 404 });
  }
});
