/**
 * Log-secret scan. `npm test` gives every process of the run a log folder (HUB_LOG_DIR; shared/logger.ts writes
 * `<proc>-<pid>.log` there at LOG_LEVEL, debug by default in tests). Every secret a test creates or sends is
 * registered in `<HUB_LOG_DIR>/secrets/<pid>.jsonl`: the HTTP helper (stack.ts makeCall) registers what the API
 * answers or receives (API key tokens, certificate request token strings, enrollment JWTs, pre-shared keys, auth
 * provider client secrets, private keys) and startStack registers the admin token. After ava, scripts/test.ts
 * scans every log file of the run for every registered secret (`scanRun`); test/system/log-secrets.test.ts does the same
 * over its own process after a pass over every route that takes or returns a secret.
 */
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export interface Secret {
  kind: string;
  value: string;
}

export interface Leak {
  file: string;
  line: number;
  kind: string;
  /** The first characters of the secret, enough to find it, not enough to use it. */
  preview: string;
}

/** Shorter values are not secrets we create (and would match by chance). */
const MIN_LENGTH = 12;

export const logDir = (): string | undefined => process.env.HUB_LOG_DIR || undefined;

const secretsFile = (dir: string) => path.join(dir, 'secrets', `${process.pid}.jsonl`);

const seen = new Set<string>();

/** Records a secret so that the scan looks for it. A no-op outside `npm test` (no HUB_LOG_DIR). */
export function registerSecret(kind: string, value: unknown): void {
  const dir = logDir();
  if (!dir || typeof value !== 'string' || value.length < MIN_LENGTH || seen.has(value)) return;
  seen.add(value);
  mkdirSync(path.join(dir, 'secrets'), { recursive: true });
  appendFileSync(secretsFile(dir), JSON.stringify({ kind, value }) + '\n');
  // a JWT in a log might be cut or re-encoded around its dots: its signature alone is a secret too
  if (kind === 'jwt') registerSecret('jwt signature', value.split('.')[2]);
  // a PEM body is logged JSON-escaped: each base64 line of it must be absent
  if (value.includes('-----BEGIN')) {
    for (const line of value.split('\n').filter((l) => /^[A-Za-z0-9+/=]{40,}$/.test(l))) registerSecret(`${kind} line`, line);
  }
}

/** Keys whose string values are secrets in a request or response body. */
const SECRET_FIELDS: Record<string, string> = {
  jwt: 'jwt',
  preSharedKey: 'pre-shared key',
  clientSecret: 'client secret',
  privateKey: 'private key',
  privateKeyPem: 'private key',
};

/**
 * Registers the secrets in an API exchange: `token` of API keys and certificate request tokens (share tokens and
 * other public identifiers are not secrets), the secret fields anywhere in either body, any PEM private key, and the
 * pre-shared key of a sample configuration (text).
 */
export function registerExchangeSecrets(urlPath: string, requestBody: unknown, response: { json?: unknown; text?: string }): void {
  if (!logDir()) return;
  const tokenBearing = /\/api-keys|\/certificate-request-tokens/.test(urlPath);
  const walk = (value: unknown, depth: number): void => {
    if (depth > 6 || value === null || value === undefined) return;
    if (typeof value === 'string') {
      if (value.includes('PRIVATE KEY-----')) registerSecret('private key', value);
      return;
    }
    if (Array.isArray(value)) return value.forEach((v) => walk(v, depth + 1));
    if (typeof value !== 'object') return;
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (SECRET_FIELDS[k]) registerSecret(SECRET_FIELDS[k], v);
      // an agent's renewal proof (a JWT signed by its key); other values in that field (a fuzz test's) are not one
      else if (k === 'proof' && typeof v === 'string' && /^[\w-]+\.[\w-]+\.[\w-]+$/.test(v)) registerSecret('renewal proof', v);
      else if (k === 'token' && tokenBearing) registerSecret(urlPath.includes('api-keys') ? 'api key' : 'token string', v);
      walk(v, depth + 1);
    }
  };
  walk(requestBody, 0);
  walk(response.json, 0);
  if (response.json === undefined && response.text) {
    for (const m of response.text.matchAll(/secret = "([^"]+)"|Pre-shared key\s*:\s*(\S+)/g)) registerSecret('pre-shared key', m[1] ?? m[2]);
    if (response.text.includes('PRIVATE KEY-----')) registerSecret('private key', response.text);
  }
}

/** Every secret registered by any process of the run. */
export function registeredSecrets(dir: string): Secret[] {
  const folder = path.join(dir, 'secrets');
  if (!existsSync(folder)) return [];
  const out = new Map<string, Secret>();
  for (const f of readdirSync(folder)) {
    for (const line of readFileSync(path.join(folder, f), 'utf8').split('\n')) {
      if (!line) continue;
      const s = JSON.parse(line) as Secret;
      out.set(s.value, s);
    }
  }
  return [...out.values()];
}

/** Every log file of the run (`*.log` directly in the folder). */
export const logFiles = (dir: string): string[] =>
  existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.log'))
        .map((f) => path.join(dir, f))
    : [];

/** Each occurrence (first per secret and file) of a secret in the files, as file:line. */
export function scanLogs(secrets: Secret[], files: string[]): Leak[] {
  const leaks: Leak[] = [];
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    for (const s of secrets) {
      // a PEM or text may sit in a JSON log line escaped: look for the escaped form too
      const forms = [s.value, JSON.stringify(s.value).slice(1, -1)];
      for (const form of forms) {
        const at = text.indexOf(form);
        if (at < 0) continue;
        const line = text.slice(0, at).split('\n').length;
        leaks.push({ file, line, kind: s.kind, preview: s.value.slice(0, 6) + '…' });
        break;
      }
    }
  }
  return leaks;
}

/** The whole run: every registered secret against every log file. */
export function scanRun(dir: string): { secrets: number; files: number; bytes: number; leaks: Leak[] } {
  const secrets = registeredSecrets(dir);
  const files = logFiles(dir);
  const bytes = files.reduce((n, f) => n + readFileSync(f).length, 0);
  return { secrets: secrets.length, files: files.length, bytes, leaks: scanLogs(secrets, files) };
}

/** The log file of this process (what shared/logger.ts writes), for a test that scans its own lines. */
export function ownLogFile(): string | undefined {
  const dir = logDir();
  return dir ? path.join(dir, `${process.env.HUB_PROCESS ?? 'app'}-${process.pid}.log`) : undefined;
}

/**
 * The distinct error lines (pino level 50 and above) of a run's logs, each with how often it came and from which file:
 * what a failed run prints, so that an answer 500 or a crash in CI can be read without the logs (which go with the
 * run's work directory). The same message from many processes counts once.
 */
export function errorLines(dir: string, most = 30): string[] {
  const seen = new Map<string, { count: number; file: string }>();
  for (const file of logFiles(dir)) {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!/"level":(5|6)0/.test(line)) continue;
      let key: string;
      try {
        const { msg, err, type, code, path: route } = JSON.parse(line) as Record<string, unknown>;
        key = JSON.stringify({ msg, err, type, code, route });
      } catch {
        key = line.slice(0, 300);
      }
      const entry = seen.get(key) ?? { count: 0, file: path.basename(file) };
      entry.count++;
      seen.set(key, entry);
    }
  }
  return [...seen].slice(0, most).map(([key, { count, file }]) => `${count}x ${file}: ${key.slice(0, 600)}`);
}
