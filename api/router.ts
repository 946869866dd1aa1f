import Router, { type RouterMiddleware } from '@koa/router';
import type { Middleware } from 'koa';
import { requireAccount, requireAdmin, requireHub } from './middleware/auth.js';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type Path = string | string[];

/** Both prefixes every hub-scoped route answers under (CONTRACT.md). */
export const HUB_PREFIXES = ['/hub/:hubId', '/hub/v2/:hubId'];

/**
 * Registers routes behind one guard under each of its prefixes. A path given as an array registers each form
 * (SPEC.md's listing and example forms), e.g. `['/health-checks/:id\\:execute', '/health-checks/:id/execute']`.
 */
export class GuardedRoutes {
  constructor(
    private readonly router: Router,
    private readonly guard: Middleware | undefined,
    private readonly prefixes: string[] = [''],
  ) {}

  private add(method: Method, paths: Path, handlers: Middleware[]): this {
    const chain = (this.guard ? [this.guard, ...handlers] : handlers) as RouterMiddleware[];
    for (const path of Array.isArray(paths) ? paths : [paths]) {
      for (const prefix of this.prefixes) this.router[method](prefix + path, ...chain);
    }
    return this;
  }

  get = (path: Path, ...h: Middleware[]) => this.add('get', path, h);
  post = (path: Path, ...h: Middleware[]) => this.add('post', path, h);
  put = (path: Path, ...h: Middleware[]) => this.add('put', path, h);
  patch = (path: Path, ...h: Middleware[]) => this.add('patch', path, h);
  delete = (path: Path, ...h: Middleware[]) => this.add('delete', path, h);
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

export function createRoutes(): { routes: Routes; routers: Router[] } {
  const routers = [new Router(), new Router(), new Router(), new Router()];
  const [open, admin, account, hub] = routers;
  return {
    routes: {
      open: new GuardedRoutes(open, undefined),
      admin: new GuardedRoutes(admin, requireAdmin),
      account: new GuardedRoutes(account, requireAccount),
      hub: new GuardedRoutes(hub, requireHub, HUB_PREFIXES),
    },
    routers,
  };
}
