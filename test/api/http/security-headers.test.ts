/**
 * Security headers on API answers, and the operator surfaces (/admin/queues, /metrics when present) never reachable
 * without the admin token, under any spelling of their paths.
 */
import test from 'ava';
import { type HubFixture, useStack } from '../../helpers/stack.js';

// hundreds of refused requests below: the failure throttle (test/api/http/security-limits.test.ts) is not what is tested here
const stack = useStack(test, { workers: false, env: { HUB_AUTH_FAILURE_LIMIT: '0' } });
let hub: HubFixture;
test.before(async () => {
  hub = await stack.hub();
});

test('API answers carry the security headers; errors and the JWKS too; secrets are never cached', async (t) => {
  const answers = [
    await hub.call('GET', `${hub.h}/certificate-request-tokens`),
    await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name: 'hdr' } }),
    await stack.call('GET', `${hub.h}/certificate-request-tokens`),
    await stack.call('GET', '/no/such/route'),
    await stack.call('GET', '/hub/v2/public/.well-known/jwks.json'),
    await stack.call('GET', '/healthz'),
  ];
  for (const r of answers) {
    t.is(r.headers.get('x-content-type-options'), 'nosniff');
    t.is(r.headers.get('x-frame-options'), 'DENY');
    t.is(r.headers.get('referrer-policy'), 'no-referrer');
    t.regex(r.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    t.regex(r.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
    t.regex(r.headers.get('strict-transport-security') ?? '', /max-age=\d+/);
    t.falsy(r.headers.get('x-powered-by'));
  }
  t.is(answers[1].headers.get('cache-control'), 'no-store', 'an answer with a token string is not cached');
  t.regex(answers[4].headers.get('cache-control') ?? '', /public, max-age=/, 'the JWKS keeps its own cache policy');
});

/** Every spelling of an operator path a router might match: case, trailing slash, doubled slash, encoded slash. */
function spellings(path: string): string[] {
  const out = new Set([
    path,
    path.toUpperCase(),
    path.replace(/^\/admin/, '/Admin'),
    path + '/',
    path.replace(/^\//, '//'),
    path.replace(/(.)\/([^/]+)$/, '$1%2F$2'),
    path + '?x=1',
  ]);
  return [...out];
}

test('/admin/queues and /metrics answer nothing without the admin token, in any spelling', async (t) => {
  const board = await stack.call('GET', '/admin/queues/api/queues', { auth: stack.admin });
  t.is(board.status, 200, 'the queue UI works with the admin token');
  const paths = [
    '/admin/queues',
    '/admin/queues/',
    '/admin/queues/api/queues',
    '/admin/queues/api/redis/stats',
    '/admin/queues/static/index.html',
    '/admin//queues/api/queues',
    '/admin/queues%2Fapi%2Fqueues',
    '/admin/%71ueues/api/queues',
    '/metrics',
  ];
  for (const path of paths.flatMap(spellings)) {
    for (const auth of [undefined, hub.bearer, 'Bearer not-a-token', 'Basic ' + Buffer.from(`admin:${hub.token}`).toString('base64')]) {
      for (const method of ['GET', 'HEAD', 'OPTIONS', 'POST', 'PUT']) {
        const r = await stack.call(method, path, { auth });
        t.false(r.status >= 200 && r.status < 400, `${method} ${path} with ${auth?.split(' ')[0] ?? 'no'} credentials answered ${r.status}`);
        t.notRegex(r.text, /"queues"|bull|# HELP|# TYPE/i, `${method} ${path} leaked content`);
      }
    }
  }
  const metrics = await stack.call('GET', '/metrics', { auth: stack.admin });
  t.true(metrics.status === 200 || metrics.status === 404, `/metrics with the admin token answered ${metrics.status}`);
});
