import { spawnSync } from 'node:child_process';
import test from 'ava';

/**
 * stdout logging gathers lines into 64 KiB chunks (shared/logger.ts LineBatcher). A process that logs lines of every
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
