import { isUtf8 } from 'node:buffer';
import { getLocation, visit, type JSONPath } from 'jsonc-parser';
import { badRequest, refusal } from '../../shared/errors.js';
import { jsonPath } from '../validate.js';

/**
 * JSON request bodies, strictly: on top of JSON.parse, a body is refused (400 naming the property) when it is not
 * UTF-8, when an object has a key twice (JSON.parse would keep the last one silently), or when a string or key holds
 * a lone surrogate (raw or escaped as `\ud800`, which JSON.parse accepts and PostgreSQL or the next hop would turn
 * into U+FFFD or refuse) or NUL (`\u0000`, which PostgreSQL text refuses and C-based consumers cut at).
 *
 * The checks that run on every body are native or linear and allocation-free: Node's UTF-8 validation (simdutf),
 * JSON.parse, one walk of the parsed value (String.prototype.isWellFormed and a NUL search on every string and key,
 * counting the keys), and one scan of the text counting the keys it spells. Both counts agree unless a key repeats;
 * only then, or for a body that is not UTF-8, does jsonc-parser (a maintained JSON scanner with positions and paths)
 * walk the text to name where. npm has no maintained strict JSON parser that refuses all of these and says where;
 * jsonc-parser alone on every body costs several times JSON.parse.
 */
export function parseStrictJson(body: Buffer): unknown {
  // first, as everything after it walks the value or the text recursively: a body nested deeper than any of ours
  if (nestingDepth(body) > MAX_DEPTH) throw refusal('EH_MALFORMED_JSON', `request body is nested more than ${MAX_DEPTH} levels deep`);
  if (!isUtf8(body)) throw refusal('EH_MALFORMED_JSON', `request body is not valid UTF-8 (at ${jsonPath(pathAtByte(body, firstInvalidUtf8(body)))})`);
  const text = body.toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw refusal('EH_MALFORMED_JSON', 'request body is not valid JSON');
  }
  const keys = countKeys(value);
  if (keys < 0) {
    const bad = badString(value, []);
    if (bad) throw badRequest(`value for property '${jsonPath(bad.path)}' is invalid: ${bad.problem}`);
  }
  if (keys !== keysSpelled(text)) {
    const duplicate = firstDuplicate(text);
    if (duplicate) throw refusal('EH_MALFORMED_JSON', `property '${jsonPath(duplicate)}' appears more than once in its object`);
  }
  return value;
}

/** The deepest nesting a request body may have: the API's own bodies go three levels deep. */
const MAX_DEPTH = 64;

/**
 * How deep the arrays and objects of a JSON text nest, read from its bytes in one pass (strings skipped, escapes
 * included; a UTF-8 sequence never holds an ASCII byte, so bytes that are not UTF-8 cannot mislead it). It stops as
 * soon as the depth passes MAX_DEPTH: a body of 100,000 open brackets would otherwise overflow the stack of the
 * recursive walks below (500) instead of being refused.
 */
function nestingDepth(bytes: Buffer): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (inString) {
      if (b === 0x5c) i++;
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) inString = true;
    else if (b === 0x5b || b === 0x7b) {
      if (++depth > deepest && (deepest = depth) > MAX_DEPTH) return deepest;
    } else if (b === 0x5d || b === 0x7d) depth--;
  }
  return deepest;
}

/** ES2024's String.prototype.isWellFormed (V8 11.x, Node 20): false for a string with an unpaired surrogate. */
const wellFormed = (s: string) => (s as string & { isWellFormed(): boolean }).isWellFormed();
const fine = (s: string) => wellFormed(s) && !s.includes('\0');

/** How many keys the objects of `value` have, or -1 as soon as a string or key is not fine (the hot path: no paths). */
function countKeys(value: unknown): number {
  if (typeof value === 'string') return fine(value) ? 0 : -1;
  if (value === null || typeof value !== 'object') return 0;
  let keys = 0;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const n = countKeys(value[i]);
      if (n < 0) return -1;
      keys += n;
    }
    return keys;
  }
  const names = Object.keys(value);
  keys += names.length;
  for (let i = 0; i < names.length; i++) {
    if (!fine(names[i])) return -1;
    const n = countKeys((value as Record<string, unknown>)[names[i]]);
    if (n < 0) return -1;
    keys += n;
  }
  return keys;
}

function stringProblem(s: string): string | undefined {
  if (!wellFormed(s)) return 'it contains a lone surrogate (an incomplete UTF-16 pair)';
  if (s.includes('\0')) return 'it contains NUL (\\u0000)';
  return undefined;
}

/** Where the first string or key that is not fine is, and why (run only once countKeys found one). */
function badString(value: unknown, path: (string | number)[]): { path: (string | number)[]; problem: string } | undefined {
  if (typeof value === 'string') {
    const problem = stringProblem(value);
    return problem ? { path, problem } : undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const bad = badString(value[i], [...path, i]);
      if (bad) return bad;
    }
    return undefined;
  }
  for (const key of Object.keys(value)) {
    const problem = stringProblem(key);
    if (problem) return { path: [...path, key], problem: `its name ${problem.slice(3)}` };
    const bad = badString((value as Record<string, unknown>)[key], [...path, key]);
    if (bad) return bad;
  }
  return undefined;
}

/** How many keys the text spells: strings followed by `:` (outside strings valid JSON has no quote, so the scan stays aligned). */
function keysSpelled(text: string): number {
  const strings = /"[^"\\]*(?:\\.[^"\\]*)*"/g;
  let n = 0;
  while (strings.test(text)) {
    let i = strings.lastIndex;
    let c = text.charCodeAt(i);
    while (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) c = text.charCodeAt(++i);
    if (c === 0x3a) n++;
  }
  return n;
}

/** The path of the first key that repeats in its object (keys compared after unescaping, as JSON.parse does). */
function firstDuplicate(text: string): JSONPath | undefined {
  const seen: Set<string>[] = [];
  let found: JSONPath | undefined;
  visit(text, {
    onObjectBegin: () => void seen.push(new Set()),
    onObjectEnd: () => void seen.pop(),
    onObjectProperty(property, _offset, _length, _line, _column, pathSupplier) {
      const keys = seen[seen.length - 1];
      if (!found && keys.has(property)) found = [...pathSupplier(), property];
      keys.add(property);
    },
  });
  return found;
}

/** The byte offset where `bytes` stop being UTF-8 (RFC 3629: no overlong forms, surrogates or code points past U+10FFFF). */
function firstInvalidUtf8(bytes: Buffer): number {
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i];
    const n = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    if (n === 0 || i + n > bytes.length) return i;
    const second = bytes[i + 1];
    if (n > 1) {
      const low = b === 0xe0 ? 0xa0 : b === 0xf0 ? 0x90 : 0x80;
      const high = b === 0xed ? 0x9f : b === 0xf4 ? 0x8f : 0xbf;
      if (second < low || second > high) return i;
      for (let k = 2; k < n; k++) if ((bytes[i + k] & 0xc0) !== 0x80) return i;
    }
    i += n;
  }
  return bytes.length;
}

/** The JSON path of the value or key at a byte offset (the bytes before it are UTF-8, so its text offset is exact). */
function pathAtByte(bytes: Buffer, offset: number): JSONPath {
  const before = bytes.subarray(0, offset).toString('utf8').length;
  return getLocation(bytes.toString('utf8'), before).path;
}
