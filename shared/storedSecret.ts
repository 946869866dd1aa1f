/** The secrets the service generates for itself once and keeps in its data directory (admin token, secret key, ...). */
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

function writeExclusive(file: string, content: string): void {
  try {
    writeFileSync(file, content, { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

/**
 * Reads a generated secret from the data dir (mode 0600), creating it once. The value is written whole to a temporary
 * file and then hard-linked to its name, which fails if the name exists: the file appears complete or not at all, so
 * a process starting at the same instant never reads it half-written, and all agree on the first one linked.
 */
export function storedSecret(dataDir: string, file: string, generate: () => string): string {
  const full = path.join(dataDir, file);
  try {
    return readFileSync(full, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(dataDir, { recursive: true });
  const temporary = `${full}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(temporary, generate() + '\n', { flag: 'wx', mode: 0o600 });
  try {
    linkSync(temporary, full);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // a file system without hard links: exclusive create of the name itself (a narrow window remains there)
    if (code === 'EPERM' || code === 'ENOTSUP' || code === 'ENOSYS') writeExclusive(full, readFileSync(temporary, 'utf8'));
    else if (code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(temporary);
  }
  return readFileSync(full, 'utf8').trim();
}
