/**
 * The path and query a target receives: the client's path, with its dot segments resolved, under the target URL's
 * own path; the target URL's query first and the client's after it, without the client's parameters that the target
 * URL already sets (the target's own parameters win: `https://t/app?role=viewer` stays `role=viewer` whatever the
 * client sends). A path that would climb above the target's path is refused.
 */
import { refusal } from '../../shared/errors.js';

/** A request target or path the edge refuses as malformed (400). */
const malformed = (message: string) => refusal('EH_REQUEST_MALFORMED', message);

/** The request target in origin-form: an absolute-form one (`GET http://host/x`) keeps its path and query. */
export function originForm(url: string | undefined): string {
  if (!url) return '/';
  if (url.startsWith('/')) return url;
  if (/^https?:\/\//i.test(url)) {
    const parsed = new URL(url);
    return parsed.pathname + parsed.search;
  }
  throw malformed(`the request target ${JSON.stringify(url.slice(0, 64))} is not a path`);
}

/** `.` and `..`, also percent-encoded (`%2e`, `.%2E`, ...). */
const isDot = (s: string) => s === '.' || s.toLowerCase() === '%2e';
const isDotDot = (s: string) => s.length >= 2 && s.length <= 6 && /^(\.|%2e)(\.|%2e)$/i.test(s);

function decoded(segment: string): string {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * RFC 3986 5.2.4 on the request path (origin-form, no query). Throws EH_REQUEST_MALFORMED when a `..` would climb above the
 * root, or when a segment hides one behind an encoded slash (`..%2F`, `%2e%2e%5c`), which some targets decode.
 */
export function resolveDotSegments(path: string): string {
  if (!path.startsWith('/')) throw malformed('the request path must start with /');
  // nothing to resolve without a dot, and nothing hidden without a percent sign (most paths)
  if (!path.includes('.') && !path.includes('%')) return path;
  const input = path.split('/').slice(1);
  const out: string[] = [];
  for (let i = 0; i < input.length; i++) {
    const segment = input[i];
    const last = i === input.length - 1;
    if (isDot(segment)) {
      if (last) out.push('');
      continue;
    }
    if (isDotDot(segment)) {
      if (out.length === 0) throw malformed('the request path climbs above the root of the share');
      out.pop();
      if (last) out.push('');
      continue;
    }
    const plain = decoded(segment);
    if (plain !== segment && /[/\\]/.test(plain) && plain.split(/[/\\]/).some((part) => part === '..')) {
      throw malformed('the request path hides a parent segment behind an encoded slash');
    }
    out.push(segment);
  }
  return `/${out.join('/')}`;
}

const nameOf = (param: string) => {
  const eq = param.indexOf('=');
  const raw = (eq < 0 ? param : param.slice(0, eq)).replaceAll('+', ' ');
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
};

/**
 * The request target sent to the share's target: `/app` + `/x/../y?q` -> `/app/y?q`. `url` is the request's target
 * in origin-form (the edge turns an absolute-form one into origin-form first).
 */
export function targetPath(target: URL, url: string): string {
  const hash = url.indexOf('#');
  if (hash >= 0) url = url.slice(0, hash);
  const q = url.indexOf('?');
  const path = resolveDotSegments(q < 0 ? url : url.slice(0, q));
  const clientQuery = q < 0 ? '' : url.slice(q + 1);
  const base = target.pathname === '/' ? '' : target.pathname.replace(/\/$/, '');
  const targetQuery = target.search.slice(1);
  if (!targetQuery) return clientQuery || q >= 0 ? `${base}${path}?${clientQuery}` : base + path;
  const taken = new Set(targetQuery.split('&').filter(Boolean).map(nameOf));
  const kept = clientQuery.split('&').filter((p) => p && !taken.has(nameOf(p)));
  return `${base}${path}?${targetQuery}${kept.length ? `&${kept.join('&')}` : ''}`;
}
