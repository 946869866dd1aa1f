import test from 'ava';
import { validate } from '@readme/openapi-parser';
import { routeModules } from '../../../api/routes/index.js';
import { openApiPath } from '../../../api/openapi/document.js';
import { createRoutes } from '../../../api/router.js';
import { useStack } from '../../helpers/stack.js';

/**
 * The OpenAPI document (/openapi.json) and the docs page (/docs). That every response the suite receives matches the
 * document is checked in every test file, by `call` (test/helpers/contract.ts).
 */

const stack = useStack(test, { workers: false });

test('/openapi.json is a valid OpenAPI 3.1 document, served without authentication', async (t) => {
  const r = await stack.call('GET', '/openapi.json');
  t.is(r.status, 200);
  t.regex(r.headers.get('content-type')!, /application\/json/);
  t.is(r.json.openapi, '3.1.0');
  const result = await validate(structuredClone(r.json));
  t.deepEqual(result.valid ? [] : result.errors, [], 'no validation errors');
  // security schemes, both path forms, error bodies, examples
  t.deepEqual(Object.keys(r.json.components.securitySchemes).sort(), ['adminToken', 'apiKeyBasic', 'apiKeyBearer']);
  t.truthy(r.json.paths['/hub/{hubId}/shares'].post);
  t.truthy(r.json.paths['/hub/v2/{hubId}/shares'].post);
  t.truthy(r.json.paths['/hub/{hubId}/health-checks/{id}:execute'].post);
  t.truthy(r.json.paths['/hub/{hubId}/health-checks/{id}/execute'].post);
  t.deepEqual(r.json.paths['/hub/{hubId}/shares'].post.responses['404'].content['application/json'].schema, { $ref: '#/components/schemas/Error' });
  t.deepEqual(r.json.paths['/admin/v1/hubs'].post.security, [{ adminToken: [] }]);
  t.deepEqual(r.json.paths['/healthz'].get.security, []);
  t.truthy(r.json.components.schemas.Hub.example);
  // request bodies come from the routes' own zod schemas: the share create names its required fields
  const shareBody = r.json.paths['/hub/{hubId}/shares'].post.requestBody.content['application/json'].schema;
  t.deepEqual(shareBody.required, ['name', 'frontendIds', 'target']);
});

test('every route the routers register is in the document, and every documented operation is registered', async (t) => {
  const { routes, routers } = createRoutes();
  for (const register of routeModules) register(routes);
  const registered = new Set<string>();
  for (const router of routers()) {
    for (const layer of router.stack) {
      for (const method of layer.methods) if (method !== 'HEAD') registered.add(`${method} ${openApiPath(String(layer.path))}`);
    }
  }
  t.true(registered.size > 100, `walked ${registered.size} routes`);
  const doc = (await stack.call('GET', '/openapi.json')).json;
  const documented = new Set<string>();
  for (const [path, item] of Object.entries<Record<string, unknown>>(doc.paths)) {
    for (const method of Object.keys(item)) documented.add(`${method.toUpperCase()} ${path}`);
  }
  t.deepEqual(
    [...registered].filter((r) => !documented.has(r)),
    [],
    'registered but not documented (add them to api/openapi/operations/)',
  );
  t.deepEqual(
    [...documented].filter((d) => !registered.has(d)),
    [],
    'documented but not registered',
  );
});

test('/docs renders Swagger UI from node_modules (no CDN) over /openapi.json', async (t) => {
  const page = await stack.call('GET', '/docs', { headers: { accept: 'text/html' } });
  t.is(page.status, 200);
  t.regex(page.headers.get('content-type')!, /text\/html/);
  const assets = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
  t.true(assets.length >= 4);
  for (const asset of assets) {
    t.true(asset.startsWith('/docs/'), `served here, not from a CDN: ${asset}`);
    const r = await fetch(stack.baseUrl + asset);
    t.is(r.status, 200, asset);
    t.true((await r.arrayBuffer()).byteLength > 0);
  }
  const init = await (await fetch(`${stack.baseUrl}/docs/docs-init.js`)).text();
  t.regex(init, /url: '\/openapi\.json'/);
  const missing = await stack.call('GET', '/docs/nope.js');
  t.is(missing.status, 404);
  t.is(missing.json.error, 'not_found');
});

test('the contract check names the route and status of a response that does not match', async (t) => {
  const { checkContract } = await import('../../helpers/contract.js');
  const error = t.throws(() =>
    checkContract({ method: 'GET', path: '/admin/v1/hubs/x', status: 200, contentType: 'application/json', json: { id: 'x', name: 'a' } }),
  );
  t.regex(error!.message, /GET \/admin\/v1\/hubs\/\{hubId\}/);
  t.regex(error!.message, /answered 200/);
  t.regex(error!.message, /must have required property 'features'/);
  const extra = t.throws(() =>
    checkContract({
      method: 'GET',
      path: '/admin/v1/hubs/x',
      status: 200,
      contentType: 'application/json',
      json: { id: 'x', name: 'a', features: { ipsec: true }, createdAt: null, secret: 1 },
    }),
  );
  t.regex(extra!.message, /must NOT have additional properties 'secret'/);
  const status = t.throws(() => checkContract({ method: 'GET', path: '/hub/h1/shares', status: 418, contentType: 'application/json', json: {} }));
  t.regex(status!.message, /GET \/hub\/\{hubId\}\/shares .*answered 418, a status the document does not list/);
  t.notThrows(() => checkContract({ method: 'GET', path: '/not/an/api/route', status: 200, contentType: 'text/plain', json: undefined }));
});
