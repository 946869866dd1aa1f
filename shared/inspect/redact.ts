/**
 * What request inspection never keeps: the values of credential headers, of the headers and of the query and form
 * parameters the operator lists (HUB_INSPECT_REDACT_HEADERS, HUB_INSPECT_REDACT_PARAMS; names compared without
 * case), each replaced by `[redacted]` before anything is queued, written or shown. The recorded path (what lists
 * show), the URL headers (`Referer`, `Location`, `Content-Location`) and a request body sent as
 * `application/x-www-form-urlencoded` have their listed parameters redacted; everything else of them is kept as it
 * was, byte for byte.
 */
import { config, type InspectConfig } from '../config.js';

export const REDACTED = '[redacted]';

/** Header names whose values are never kept, whatever the settings say: credentials and the client certificate. */
const CREDENTIAL_HEADERS: readonly string[] = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-client-certificate-name',
  'x-client-certificate-fingerprint',
  'x-client-cert',
  'x-ssl-client-cert',
  'ssl-client-cert',
  'x-forwarded-client-cert',
];

/** Headers whose value is a URL: its query is redacted like the recorded path's. */
const URL_HEADERS = new Set(['referer', 'location', 'content-location']);

interface Lists {
  headers: Set<string>;
  params: Set<string>;
  /** The lengths of the header names looked at: most header names are not lower-cased to be looked up. */
  lengths: Set<number>;
}

let cached: { from: InspectConfig; lists: Lists } | undefined;

function lists(): Lists {
  const inspect = config().inspect;
  if (cached?.from === inspect) return cached.lists;
  const headers = new Set([...CREDENTIAL_HEADERS, ...inspect.redactHeaders]);
  const lengths = new Set([...headers, ...URL_HEADERS].map((name) => name.length));
  const built = { headers, params: new Set(inspect.redactParams), lengths };
  cached = { from: inspect, lists: built };
  return built;
}

const decodedName = (raw: string): string => {
  const plain = raw.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(plain).toLowerCase();
  } catch {
    return plain.toLowerCase();
  }
};

/** `a=1&token=x` with the listed parameters' values replaced; the same string when none is listed. */
function redactPairs(text: string, params: Set<string>): string {
  let changed = false;
  const parts = text.split('&');
  for (let i = 0; i < parts.length; i++) {
    const eq = parts[i].indexOf('=');
    const name = eq < 0 ? parts[i] : parts[i].slice(0, eq);
    if (!params.has(decodedName(name))) continue;
    if (eq >= 0 && parts[i].slice(eq + 1) === REDACTED) continue;
    parts[i] = `${name}=${REDACTED}`;
    changed = true;
  }
  return changed ? parts.join('&') : text;
}

/** A path or URL with the listed query parameters' values replaced (its fragment kept); the same string when none is. */
export function redactQuery(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const hash = url.indexOf('#', q);
  const query = hash < 0 ? url.slice(q + 1) : url.slice(q + 1, hash);
  const redacted = redactPairs(query, lists().params);
  if (redacted === query) return url;
  return url.slice(0, q + 1) + redacted + (hash < 0 ? '' : url.slice(hash));
}

/** Whether header lines say the body is a form (`application/x-www-form-urlencoded`). */
export function isForm(lines: readonly string[]): boolean {
  for (let i = 0; i < lines.length; i += 2) {
    if (lines[i].length === 12 && lines[i].toLowerCase() === 'content-type') return /^\s*application\/x-www-form-urlencoded/i.test(lines[i + 1]);
  }
  return false;
}

/** A form body with the listed fields' values replaced (bytes read as latin1, so every other byte stays as it was). */
export function redactForm(body: Buffer): Buffer {
  const text = body.toString('latin1');
  const redacted = redactPairs(text, lists().params);
  return redacted === text ? body : Buffer.from(redacted, 'latin1');
}

/**
 * Flat header lines (name, value, name, value...) with the redacted headers' values replaced and the URL headers'
 * queries redacted: the same array when nothing changes (it is only read), else a copy (the caller's lines, which
 * may still be sent, are never changed).
 */
export function redactLines(lines: readonly string[]): readonly string[] {
  const { headers, lengths } = lists();
  let out: string[] | undefined;
  for (let i = 0; i < lines.length; i += 2) {
    const name = lines[i];
    if (!lengths.has(name.length)) continue;
    const lower = name.toLowerCase();
    let value: string | undefined;
    if (headers.has(lower)) value = REDACTED;
    else if (URL_HEADERS.has(lower)) value = redactQuery(lines[i + 1]);
    if (value === undefined || value === lines[i + 1]) continue;
    out ??= lines.slice();
    out[i + 1] = value;
  }
  return out ?? lines;
}
