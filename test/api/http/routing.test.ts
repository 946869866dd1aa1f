import http from 'node:http';
import { Socket } from 'node:net';
import Router from '@koa/router';
import test from 'ava';
import Koa, { type Middleware } from 'koa';
import { routeModules } from '../../../api/routes/index.js';
import { createRoutes, HUB_PREFIXES, type GuardedRoutes, type Routes } from '../../../api/router.js';

/**
 * The API's dispatch (api/router.ts: routers per guard, prefix and resource, each dispatched with its route's chain
 * composed once) against @koa/router's own dispatch of one router per guard holding every route in registration
 * order, as the API routed before either change: for every registered route, in every method, in concrete paths
 * (parameters filled in, encoded, upper-cased, with a trailing slash), plus paths near them, the same handlers run in
 * the same order with the same params and matched route template. Handlers here record themselves and pass on, so a
 * request that falls through one guard's routes to the next is compared too.
 */

type GuardName = keyof Routes;
type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
interface Registered {
  guard: GuardName;
  method: Method;
  paths: string[];
}

/** Every route the route modules register, by guard (the modules see a Routes that only records). */
async function registeredRoutes(): Promise<Registered[]> {
  const found: Registered[] = [];
  const recorder = (guard: GuardName) => {
    const add = (method: Method) => (paths: string | string[]) => {
      found.push({ guard, method, paths: Array.isArray(paths) ? paths : [paths] });
      return recorderOf[guard];
    };
    return { get: add('get'), post: add('post'), put: add('put'), patch: add('patch'), delete: add('delete') };
  };
  const recorderOf = { open: recorder('open'), admin: recorder('admin'), account: recorder('account'), hub: recorder('hub') };
  for (const register of routeModules) register(recorderOf as unknown as Routes);
  return found;
}

type Trace = string[];
interface Outcome {
  trace: Trace;
  params: string;
  matchedRoute: unknown;
}

const GUARDS: GuardName[] = ['open', 'admin', 'account', 'hub'];
const PREFIXES: Record<GuardName, string[]> = { open: [''], admin: [''], account: [''], hub: HUB_PREFIXES };

/** A handler that records which route ran (and with what params) and passes the request on. */
const recording =
  (id: string): Middleware =>
  (ctx, next) => {
    (ctx.state.trace as Trace).push(`${id} ${JSON.stringify(ctx.params)} ${String(ctx._matchedRoute)}`);
    return next();
  };
const guardStub =
  (name: string): Middleware =>
  (ctx, next) => {
    (ctx.state.trace as Trace).push(`guard:${name}`);
    return next();
  };

function compiled(routes: Registered[]): Middleware {
  const { routes: r, middleware } = createRoutes({ admin: guardStub('admin'), account: guardStub('account'), hub: guardStub('hub') });
  routes.forEach((route, i) => (r[route.guard] as GuardedRoutes)[route.method](route.paths, recording(`route${i}`)));
  return middleware();
}

/** @koa/router's dispatch: one router per guard, every route under each of its prefixes in registration order. */
function reference(routes: Registered[]): Middleware {
  const routers = GUARDS.map((guard) => {
    const router = new Router();
    routes.forEach((route, i) => {
      if (route.guard !== guard) return;
      const chain = guard === 'open' ? [recording(`route${i}`)] : [guardStub(guard), recording(`route${i}`)];
      for (const path of route.paths) for (const prefix of PREFIXES[guard]) router[route.method](prefix + path, ...chain);
    });
    return router.routes() as Middleware;
  });
  return (ctx, next) => {
    let i = 0;
    const tryNext = (): Promise<void> => (i < routers.length ? (routers[i++]!(ctx, tryNext) as Promise<void>) : next());
    return tryNext();
  };
}

const app = new Koa();
async function run(dispatch: Middleware, method: string, url: string): Promise<Outcome> {
  const req = new http.IncomingMessage(new Socket());
  req.method = method;
  req.url = url;
  req.headers = { host: 'localhost' };
  const ctx = app.createContext(req, new http.ServerResponse(req));
  ctx.state.trace = [];
  await dispatch(ctx, async () => {
    (ctx.state.trace as Trace).push('end');
  });
  return { trace: ctx.state.trace as Trace, params: JSON.stringify(ctx.params ?? null), matchedRoute: ctx._matchedRoute };
}

/** Concrete paths for a route template: parameters filled in several ways, and variants that may or may not match. */
function concretePaths(template: string): string[] {
  const fill = (value: string) => template.replace(/(?<!\\):([A-Za-z0-9_]+)/g, () => value).replace(/\\(.)/g, '$1');
  const plain = fill('abc123');
  return [
    plain,
    fill('a%20b'),
    fill('x.y-z_1'),
    fill('certificate-request-tokens'),
    fill('v2'),
    `${plain}/`,
    plain.toUpperCase(),
    `${plain}/extra`,
    plain.replace(/\/[^/]*$/, ''),
    plain.replace('/hub/', '/hub/v2/'),
  ];
}

test('the dispatch by resource (one @koa/router per resource) runs the same routes, in the same order, with the same params as one router of them all', async (t) => {
  const routes = await registeredRoutes();
  t.true(routes.length > 50, `${routes.length} routes registered`);
  const ours = compiled(routes);
  const theirs = reference(routes);
  const paths = new Set<string>([
    '/',
    '/healthz',
    '/hub',
    '/hub/v2',
    '/hub/v2/public/.well-known/jwks.json',
    '/nothing/here',
    '/hub//certificate-request-tokens',
  ]);
  for (const route of routes)
    for (const path of route.paths) for (const prefix of PREFIXES[route.guard]) for (const p of concretePaths(prefix + path)) paths.add(p);
  let compared = 0;
  let routed = 0;
  for (const path of paths) {
    if (!path.startsWith('/')) continue; // an HTTP request target is never empty
    for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
      for (const url of [path, `${path}?page=1`]) {
        const [a, b] = [await run(ours, method, url), await run(theirs, method, url)];
        t.deepEqual(a, b, `${method} ${url}`);
        compared++;
        if (a.trace.length > 1) routed++;
      }
    }
  }
  t.true(routed > 1000, `${routed} of ${compared} requests reached a route`);
});
