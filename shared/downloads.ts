/**
 * What the service hands a user's machine: the agent package (`npm pack` of agent/, so that `npm install -g
 * <PUBLIC_BASE_URL>/downloads/edgehub-agent.tgz` installs the `edgehub` command without asking a registry for a
 * name) and, when `npm run build:agent-binary` made it, the single executable for machines without Node.
 *
 * The tarball is packed once per content of agent/ into $HUB_DATA_DIR/downloads (its name carries a digest of the
 * files, so a changed agent is packed again); concurrent first requests share one pack, and several processes
 * agree because each writes aside and renames.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { config } from './config.js';
import { unavailable } from './errors.js';
import { logger } from './logger.js';

const run = promisify(execFile);

/** The agent package's folder in this checkout. */
export const AGENT_DIR = fileURLToPath(new URL('../agent/', import.meta.url));
/** Where `npm run build:agent-binary` writes the single executable. */
export const AGENT_BINARY = path.join(AGENT_DIR, 'dist', 'edgehub-linux-x64');
/** Beside it, the digest of the agent's files it was built from (agentDigest). */
export const AGENT_BINARY_DIGEST = `${AGENT_BINARY}.digest`;

/** The files npm packs (package.json's `files`, plus package.json), sorted: what the digest covers. */
function packedFiles(): string[] {
  const pkg = JSON.parse(readFileSync(path.join(AGENT_DIR, 'package.json'), 'utf8')) as { files?: string[] };
  const out: string[] = ['package.json'];
  const walk = (rel: string) => {
    const full = path.join(AGENT_DIR, rel);
    if (!existsSync(full)) return;
    if (statSync(full).isDirectory()) for (const name of readdirSync(full)) walk(path.join(rel, name));
    else out.push(rel);
  };
  for (const entry of pkg.files ?? []) walk(entry);
  return [...new Set(out)].sort();
}

/** A digest of the agent package's files: what the tarball's name and the single executable's build carry. */
export function agentDigest(): string {
  const hash = createHash('sha256');
  for (const rel of packedFiles())
    hash
      .update(rel)
      .update('\0')
      .update(readFileSync(path.join(AGENT_DIR, rel)))
      .update('\0');
  return hash.digest('hex').slice(0, 16);
}

let building: { key: string; done: Promise<string> } | undefined;

/** The path of the packed agent package (packed now when this content was never packed). */
export async function agentTarball(): Promise<string> {
  const dir = path.join(config().dataDir, 'downloads');
  const key = agentDigest();
  const file = path.join(dir, `edgehub-agent-${key}.tgz`);
  if (existsSync(file)) return file;
  if (building?.key === key) return building.done;
  const done = (async () => {
    mkdirSync(dir, { recursive: true });
    const aside = path.join(dir, `.pack-${randomBytes(6).toString('hex')}`);
    mkdirSync(aside);
    try {
      const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', aside], {
        cwd: AGENT_DIR,
        env: { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' },
        timeout: 60_000,
      });
      const [packed] = JSON.parse(stdout) as { filename: string }[];
      renameSync(path.join(aside, packed.filename), file);
      logger.info({ file }, 'agent package packed');
      return file;
    } catch (err) {
      logger.error({ err: (err as Error).message }, 'agent package could not be packed');
      throw unavailable(`the agent package could not be packed here (npm pack in ${AGENT_DIR}: ${(err as Error).message.split('\n')[0]})`);
    } finally {
      rmSync(aside, { recursive: true, force: true });
    }
  })();
  building = { key, done };
  done
    .catch(() => undefined)
    .finally(() => {
      if (building?.done === done) building = undefined;
    });
  return done;
}

/**
 * The single executable when it was built from the agent files this service has, else why not. One built from other
 * files (an upgrade of the service without a new build) would hand users an agent older or newer than the package and
 * the edges they talk to: it is not served until it is built again.
 */
export function agentBinary(): { file: string } | { missing: string } {
  if (!existsSync(AGENT_BINARY)) return { missing: 'the single executable is not built on this service (npm run build:agent-binary builds it)' };
  const built = existsSync(AGENT_BINARY_DIGEST) ? readFileSync(AGENT_BINARY_DIGEST, 'utf8').trim() : '';
  if (built !== agentDigest())
    return { missing: 'the single executable on this service was built from another version of the agent: build it again (npm run build:agent-binary)' };
  return { file: AGENT_BINARY };
}
