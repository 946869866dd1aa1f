import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet, { type HelmetOptions } from 'helmet';

/** Pages that render HTML with their own scripts and styles (the queue UI, an API docs page): no strict CSP there. */
const HTML_PAGES = /^\/(?:admin\/queues|docs|console)(?:\/|$)/i;

interface HeaderSet {
  set: [name: string, value: string][];
  remove: string[];
}

/**
 * What helmet does to a response with these options, recorded once. With fixed options (no directive given as a
 * function of the request, which helmet would call per request) its answer is the same for every request, so the
 * recorded list is applied instead of running helmet's dozen middlewares through a promise on every request.
 */
export function helmetHeaders(options: Readonly<HelmetOptions>): HeaderSet {
  const recorded: HeaderSet = { set: [], remove: [] };
  const res = {
    setHeader(name: string, value: unknown) {
      recorded.set.push([name, String(value)]);
    },
    removeHeader(name: string) {
      recorded.remove.push(name);
    },
  };
  const request = new Proxy({} as IncomingMessage, {
    get() {
      throw new Error('helmet read the request: these options make headers that differ per request');
    },
  });
  let finished = false;
  helmet(options)(request, res as unknown as ServerResponse, (err?: unknown) => {
    if (err) throw err;
    finished = true;
  });
  if (!finished) throw new Error('helmet did not finish synchronously');
  return recorded;
}

/** JSON answers: nothing may be loaded, framed or sniffed from them. */
const forApi = helmetHeaders({
  contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  frameguard: { action: 'deny' },
  referrerPolicy: { policy: 'no-referrer' },
});
const forPages = helmetHeaders({ contentSecurityPolicy: false, frameguard: { action: 'deny' }, referrerPolicy: { policy: 'no-referrer' } });

/** The recorded helmet headers for a path (pages with their own scripts and styles get no strict CSP). */
export function securityHeaderSet(path: string): Readonly<HeaderSet> {
  return HTML_PAGES.test(path) ? forPages : forApi;
}
