/**
 * A policy's basic auth: the request's `Authorization: Basic` credentials against the share's users (scrypt hashes,
 * shared/sharePolicy.ts). A verdict is remembered by a digest of the header for the life of the compiled policy
 * (bounded), so that a client sending the same credentials costs one scrypt, not one per request.
 */
import { createHash } from 'node:crypto';
import { verifyPassword } from '../../shared/sharePolicy.js';

const REMEMBERED = 1000;

export class BasicAuth {
  private readonly users: Map<string, string>;
  private readonly verdicts = new Map<string, string | false>();

  constructor(users: readonly { user: string; hash: string }[]) {
    this.users = new Map(users.map((u) => [u.user, u.hash]));
  }

  /** The user the header authenticates, or undefined (no credentials, or wrong ones). */
  check(header: string | undefined): string | undefined | Promise<string | undefined> {
    if (!header || header.length < 7 || header.slice(0, 6).toLowerCase() !== 'basic ') return undefined;
    const key = createHash('sha256').update(header).digest('base64');
    const known = this.verdicts.get(key);
    if (known !== undefined) return known || undefined;
    const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const user = colon < 0 ? '' : decoded.slice(0, colon);
    const hash = this.users.get(user);
    const remember = (ok: boolean) => {
      if (this.verdicts.size >= REMEMBERED) this.verdicts.clear();
      this.verdicts.set(key, ok ? user : false);
      return ok ? user : undefined;
    };
    if (!hash) return remember(false);
    return verifyPassword(decoded.slice(colon + 1), hash).then(remember, () => remember(false));
  }
}
