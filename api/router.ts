import Router, { type Layer, type RouterMiddleware } from '@koa/router';
import type { Context, Middleware, Next } from 'koa';
import compose from 'koa-compose';
import { requireAccount, requireAdmin, requireHub } from './middleware/auth.js';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type Path = string | string[];

/** Both prefixes every hub-scoped route answers under (CONTRACT.md). */
export const HUB_PREFIXES = ['/hub/:hubId', '/hub/v2/:hubId'];

/** A path's first segment when it is literal text (`\:` unescaped, lower-cased: routes match case-insensitively), else undefined. */
function literalHead(path: string): string | undefined {
  const head = path.slice(1).split('/')[0];
  if (/(?:^|[^\\])[:{}()*?+]/.test(head)) return undefined;
  return head.replace(/\\(.)/g, '$1').toLowerCase();
}

/** A prefix as its segments: literal text (lower-cased) or `null` for a parameter. */
const prefixShape = (prefix: string): (string | null)[] =>
  prefix === '' ? [] : prefix.slice(1).split('/').map((s) => (s.startsWith(':') ? null : s.toLowerCase()));

/**
 * Registers routes behind one guard under each of its prefixes. A path given as an array registers each form
 * (SPEC.md's listing and example forms), e.g. `['/health-checks/:id\\:execute', '/health-checks/:id/execute']`.
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
   * The router that may hold a route for a path (given as its `/`-separated segments), or undefined when none of this
   * guard's routes can match it.
   */
  dispatcher(): (segments: string[]) => CompiledRouter | undefined {
    if (this.unkeyed) {
      const all = new CompiledRouter(this.all);
      return () => all;
    }
    const dispatch = this.byHead.map((m) => new Map<string, CompiledRouter>([...m].map(([head, router]) => [head, new CompiledRouter(router)])));
    const shapes = this.shapes;
    const everything = new CompiledRouter(this.all);
    return (segments) => {
      let found: CompiledRouter | undefined;
      for (let s = 0; s < shapes.length; s++) {
        const shape = shapes[s];
        if (segments.length < shape.length + 2) continue;
        let fits = true;
        for (let i = 0; i < shape.length && fits; i++) {
          const literal = shape[i];
          const segment = segments[i + 1];
          fits = literal === null ? segment !== '' : segment.length === literal.length && segment.toLowerCase() === literal;
        }
        if (!fits) continue;
        const candidate = dispatch[s].get(segments[shape.length + 1].toLowerCase());
        // a path that fits both prefixes with a resource under each (`/hub/v2/<a resource's name>/...`): every route,
        // so that the first registered one wins as it always did
        if (candidate && found) return everything;
        found ??= candidate;
      }
      return found;
    };
  }
}

type RoutedContext = Context & {
  captures?: string[];
  routerPath?: string;
  routerName?: string;
  _matchedRoute?: string | RegExp;
  _matchedRouteName?: string;
  request: Context['request'] & { params?: Record<string, string> };
};

/** A route of a router as the dispatch needs it: its methods, its regular expression, its chain composed once. */
interface CompiledLayer {
  layer: Layer;
  methods: ReadonlySet<string>;
  regexp: RegExp;
  chain: compose.ComposedMiddleware<Context>;
}

/**
 * One @koa/router Router, dispatched as its own middleware does: the routes whose method and path (the library's
 * regular expressions) match, in registration order; the same params (the library's Layer decodes them), and the
 * route's template in `_matchedRoute` (also `routerPath`, `captures`, `params`). Without the work that middleware
 * repeats on every request: for each route the chain of guard and handlers is composed once (the library builds a
 * params closure and composes the chain anew per request), the method is compared before the path is tested, and the
 * path is matched once. A request that more than one route matches (never the case today: no two routes of a router
 * share a path and method) is handed to the library's own middleware. `matched`, `router` and `routeMatched`, which
 * nothing here reads, are not set.
 */
export class CompiledRouter {
  private layers: CompiledLayer[] = [];
  private readonly library: Middleware;

  constructor(readonly router: Router) {
    this.library = router.routes() as Middleware;
  }

  private compiled(): CompiledLayer[] {
    const stack = this.router.stack;
    if (this.layers.length !== stack.length) {
      this.layers = stack.map((layer) => ({
        layer,
        methods: new Set(layer.methods),
        regexp: layer.regexp,
        chain: compose(layer.stack as unknown as Middleware[]),
      }));
    }
    return this.layers;
  }

  /** Runs the route of this router that matches, or returns undefined when none does (the library would call next). */
  dispatch(context: Context, path: string, next: Next): Promise<unknown> | undefined {
    const layers = this.compiled();
    const method = context.method.toUpperCase();
    let found: CompiledLayer | undefined;
    for (let i = 0; i < layers.length; i++) {
      const candidate = layers[i]!;
      if (!candidate.methods.has(method) || !candidate.regexp.test(path)) continue;
      if (found) return this.library(context, next);
      found = candidate;
    }
    if (!found) return undefined;
    const ctx = context as RoutedContext;
    const layer = found.layer;
    const match = found.regexp.exec(path);
    ctx._matchedRoute = layer.path;
    if (layer.name) ctx._matchedRouteName = layer.name;
    ctx.captures = layer.opts.ignoreCaptures || !match ? [] : match.slice(1);
    ctx.params = ctx.request.params = layer.params(path, ctx.captures, ctx.params);
    ctx.routerPath = layer.path as string;
    ctx.routerName = layer.name || undefined;
    return found.chain(ctx, next);
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
        const path = ctx.path;
        const segments = path.split('/');
        let i = 0;
        // a router without a route for the request passes it on to the next guard's, the last to `next`
        const tryNext = (): Promise<unknown> => {
          while (i < dispatchers.length) {
            const router = dispatchers[i++](segments);
            const running = router?.dispatch(ctx, path, tryNext);
            if (running) return running;
          }
          return next();
        };
        return tryNext();
      };
    },
  };
}
