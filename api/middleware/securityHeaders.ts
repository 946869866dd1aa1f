import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet, { type HelmetOptions } from 'helmet';

/** Pages that render HTML with their own scripts and styles (the queue UI, the console): no strict CSP there. */
const HTML_PAGES = /^\/(?:admin\/queues|console)(?:\/|$)/i;
/** The API docs page (Swagger UI, api/routes/openapi.ts): everything it loads comes from this server. */
const DOCS_PAGE = /^\/docs(?:\/|$)/i;

interface HeaderSet {
  set: [name: string, value: string][];
  remove: string[];
}

/**
 * What helmet does to a response with these options, recorded once. With fixed options (no directive given as a
 * function of the request, which helmet would call per request) its answer is the same for every request, so the
 * recorded list is applied instead of running helmet's dozen middlewares through a promise on every request.
 */
function helmetHeaders(options: Readonly<HelmetOptions>): HeaderSet {
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
/**
 * Swagger UI offline and nothing else: its bundle, preset, styles and the init script from this server, the OpenAPI
 * document and "try it out" requests to this server, its icons as data: images. No inline script, no eval, no other
 * origin; no form posts, no <base>, no framing.
 */
const forDocs = helmetHeaders({
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'none'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'", 'data:'],
      fontSrc: ["'self'"],
      connectSrc: ["'self'"],
      baseUri: ["'none'"],
      formAction: ["'none'"],
      frameAncestors: ["'none'"],
    },
  },
  frameguard: { action: 'deny' },
  referrerPolicy: { policy: 'no-referrer' },
});

/** The recorded helmet headers for a path (the docs page its own CSP; the queue UI and the console none). */
export function securityHeaderSet(path: string): Readonly<HeaderSet> {
  return DOCS_PAGE.test(path) ? forDocs : HTML_PAGES.test(path) ? forPages : forApi;
}
