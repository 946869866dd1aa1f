import Router, { type RouterMiddleware } from '@koa/router';
import type { Middleware } from 'koa';
import { requireAccount, requireAdmin, requireHub } from './middleware/auth.js';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type Path = string | string[];

/** Both prefixes every hub-scoped route answers under. */
export const HUB_PREFIXES = ['/hub/:hubId', '/hub/v2/:hubId'];

/** A path's first segment when it is literal text (`\:` unescaped, lower-cased: routes match case-insensitively), else undefined. */
function literalHead(path: string): string | undefined {
  const head = path.slice(1).split('/')[0];
  if (/(?:^|[^\\])[:{}()*?+]/.test(head)) return undefined;
  return head.replace(/\\(.)/g, '$1').toLowerCase();
}

/** A prefix as its segments: literal text (lower-cased) or `null` for a parameter. */
const prefixShape = (prefix: string): (string | null)[] =>
  prefix === ''
    ? []
    : prefix
        .slice(1)
        .split('/')
        .map((s) => (s.startsWith(':') ? null : s.toLowerCase()));

/**
 * Registers routes behind one guard under each of its prefixes. A path given as an array registers each form
 * (the listing and example forms the API documents), e.g. `['/health-checks/:id\\:execute', '/health-checks/:id/execute']`.
 *
 * Routes are kept in one @koa/router Router per prefix and resource, i.e. per first path segment after the prefix
 * (`certificate-request-tokens`, `shares`, ...), and a request is handed only to the router of its own segment: a
 * router tries every route it holds, in order, so one router for all ~130 hub routes cost a regular expression test
 * per route on every request. A route can only match a path whose segment after its prefix equals its literal first
 * segment, so the routes tried are the same ones that could match before, in the same order. A path that fits two
 * (`/hub/v2/<a resource's name>/...`) goes to one router holding every route of the guard in registration order, as
 * do all paths should a route ever start with a parameter.
 */
export class GuardedRoutes {
  /** For each prefix, every route of this guard in registration order, by the literal first segment after it. */
  private readonly byHead: Map<string, Router>[];
  /** All routes in one router: used instead when a route's first segment is not literal, or a path fits two resources. */
  private readonly all = new Router();
  private unkeyed = false;
  private readonly shapes: (string | null)[][];

  constructor(
    private readonly guard: Middleware | undefined,
    private readonly prefixes: string[] = [''],
  ) {
    this.shapes = prefixes.map(prefixShape);
    this.byHead = prefixes.map(() => new Map());
  }

  private add(method: Method, paths: Path, handlers: Middleware[]): this {
    const chain = (this.guard ? [this.guard, ...handlers] : handlers) as RouterMiddleware[];
    for (const path of Array.isArray(paths) ? paths : [paths]) {
      const head = literalHead(path);
      if (head === undefined) this.unkeyed = true;
      this.prefixes.forEach((prefix, i) => {
        if (head !== undefined) {
          let router = this.byHead[i].get(head);
          if (!router) this.byHead[i].set(head, (router = new Router()));
          router[method](prefix + path, ...chain);
        }
        this.all[method](prefix + path, ...chain);
      });
    }
    return this;
  }

  get = (path: Path, ...h: Middleware[]) => this.add('get', path, h);
  post = (path: Path, ...h: Middleware[]) => this.add('post', path, h);
  put = (path: Path, ...h: Middleware[]) => this.add('put', path, h);
  patch = (path: Path, ...h: Middleware[]) => this.add('patch', path, h);
  delete = (path: Path, ...h: Middleware[]) => this.add('delete', path, h);

  /** The routers, for walking the registered routes (each route is in exactly one). */
  routers(): Router[] {
    return this.unkeyed ? [this.all] : this.byHead.flatMap((m) => [...m.values()]);
  }

  /**
   * The middleware of the router that may hold a route for a path (given as its `/`-separated segments): the
   * library's own `routes()` middleware of that resource's router, or undefined when none of this guard's routes can
   * match it.
   */
  dispatcher(): (segments: string[]) => Middleware | undefined {
    const everything = this.all.routes() as Middleware;
    if (this.unkeyed) return () => everything;
    const dispatch = this.byHead.map((m) => new Map<string, Middleware>([...m].map(([head, router]) => [head, router.routes() as Middleware])));
    const shapes = this.shapes;
    return (segments) => {
      let found: Middleware | undefined;
      for (let s = 0; s < shapes.length; s++) {
        const shape = shapes[s];
        if (segments.length < shape.length + 2) continue;
        let fits = true;
        for (let i = 0; i < shape.length && fits; i++) {
          const literal = shape[i];
          const segment = segments[i + 1];
          fits = literal === null ? segment !== '' : segment.toLowerCase() === literal;
        }
        if (!fits) continue;
        const candidate = dispatch[s].get(segments[shape.length + 1].toLowerCase());
        // a path that fits both prefixes with a resource under each (`/hub/v2/<a resource's name>/...`): every route,
        // so that the first registered one wins
        if (candidate && found) return everything;
        found ??= candidate;
      }
      return found;
    };
  }
}

/** What a route module (api/routes/*.ts, default export) receives. */
export interface Routes {
  /** No authentication (health, JWKS, enrollment) or a route's own (token-in-path). Matched first. */
  open: GuardedRoutes;
  /** Operator routes; requireAdmin applies. */
  admin: GuardedRoutes;
  /** Account routes without a hub in the path (API key's own hub); requireAccount applies. */
  account: GuardedRoutes;
  /** Hub-scoped routes under `/hub/{hubId}` and `/hub/v2/{hubId}`; requireHub applies. */
  hub: GuardedRoutes;
}

/**
 * The four guards, matched in this order: `middleware()` gives the app the one middleware that hands a request to the
 * router of each guard that may hold its route, in turn (after the routes were registered); `routers()` lists the
 * @koa/router routers that hold them. `guard` replaces the three authentication guards (tests of the dispatch).
 */
export function createRoutes(
  guard: { admin: Middleware; account: Middleware; hub: Middleware } = { admin: requireAdmin, account: requireAccount, hub: requireHub },
): { routes: Routes; routers: () => Router[]; middleware: () => Middleware } {
  const routes: Routes = {
    open: new GuardedRoutes(undefined),
    admin: new GuardedRoutes(guard.admin),
    account: new GuardedRoutes(guard.account),
    hub: new GuardedRoutes(guard.hub, HUB_PREFIXES),
  };
  const guards = [routes.open, routes.admin, routes.account, routes.hub];
  return {
    routes,
    routers: () => guards.flatMap((g) => g.routers()),
    middleware: () => {
      const dispatchers = guards.map((g) => g.dispatcher());
      return (ctx, next) => {
        const segments = ctx.path.split('/');
        let i = 0;
        // a router without a route for the request calls its `next`: the next guard's router, the last one `next`
        const tryNext = (): Promise<unknown> => {
          while (i < dispatchers.length) {
            const routes = dispatchers[i++](segments);
            if (routes) return routes(ctx, tryNext) as Promise<unknown>;
          }
          return next();
        };
        return tryNext();
      };
    },
  };
}
