/**
 * Per-address limits: repeated authentication failures are throttled (429 + Retry-After), the unauthenticated routes
 * (enroll, token-in-path, JWKS) have a request limit, both are configurable and have an off switch, and the defaults
 * leave ordinary use alone. Each test boots its own stack with its own settings.
 */
import test from 'ava';
import { startStack, type Stack } from '../../helpers/stack.js';
import { assertRefused } from '../../helpers/refusals.js';

const LIMIT_ENV = ['HUB_AUTH_FAILURE_LIMIT', 'HUB_AUTH_FAILURE_WINDOW_SECONDS', 'HUB_UNAUTH_RATE_LIMIT', 'HUB_UNAUTH_RATE_WINDOW_SECONDS'];

async function withStack(env: Record<string, string>, fn: (stack: Stack) => Promise<void>) {
  for (const k of LIMIT_ENV) delete process.env[k];
  const stack = await startStack({ env, workers: false });
  try {
    await fn(stack);
  } finally {
    await stack.stop();
    for (const k of LIMIT_ENV) delete process.env[k];
  }
}

const retryAfter = (headers: Headers) => Number(headers.get('retry-after'));

test.serial('repeated authentication failures from one address get 429 with Retry-After, then every request does until the window ends', async (t) => {
  await withStack({ HUB_AUTH_FAILURE_LIMIT: '3', HUB_AUTH_FAILURE_WINDOW_SECONDS: '120' }, async (stack) => {
    const hub = await stack.hub();
    for (let i = 0; i < 3; i++) {
      const r = await stack.call('GET', `${hub.h}/certificate-request-tokens`, { auth: `Bearer wrong-token-${i}` });
      t.is(r.status, 401, `failure ${i + 1} is still a 401`);
    }
    const over = await stack.call('GET', `${hub.h}/certificate-request-tokens`, { auth: 'Bearer wrong-token-x' });
    assertRefused(t, over, 429, 'too_many_requests', 'EH_RATE_LIMITED');
    t.true(retryAfter(over.headers) >= 1 && retryAfter(over.headers) <= 120, `Retry-After ${over.headers.get('retry-after')}`);
    const good = await stack.call('GET', `${hub.h}/certificate-request-tokens`, { auth: hub.bearer });
    t.is(good.status, 429, 'the address stays blocked, even with a valid key');
    t.truthy(good.headers.get('retry-after'));
    const malformed = await stack.call('GET', '/admin/v1/hubs/x', { auth: 'Basic %%%' });
    t.is(malformed.status, 429);
    t.is((await stack.call('GET', '/healthz')).status, 200, 'liveness is never throttled');
  });
});

test.serial('the unauthenticated routes (JWKS, enroll, token-in-path, agent enrollment and renewal) have a per-address request limit', async (t) => {
  await withStack({ HUB_UNAUTH_RATE_LIMIT: '6', HUB_UNAUTH_RATE_WINDOW_SECONDS: '120' }, async (stack) => {
    const hub = await stack.hub();
    const jwks = '/hub/v2/public/.well-known/jwks.json';
    t.is((await stack.call('GET', jwks)).status, 200);
    t.is((await stack.call('POST', `${hub.h2}/client-certificates/enroll`, { body: { jwt: 'a.b.c', csr: 'x' } })).status, 403);
    t.is((await stack.call('POST', `${hub.h}/client-certificates/token/nope`, { body: { type: 'CSR', value: 'x' } })).status, 403);
    t.is((await stack.call('POST', `${hub.h2}/agents/enroll`, { body: { jwt: 'a.b.c', csr: 'x' } })).status, 403);
    t.is((await stack.call('POST', `${hub.h2}/agents/no-such-agent/renew`, { body: { csr: 'x', proof: 'a.b.c' } })).status, 403);
    t.is((await stack.call('GET', jwks)).status, 200);
    for (const [method, path] of [
      ['GET', jwks],
      ['POST', `${hub.h2}/client-certificates/enroll`],
      ['POST', `${hub.h}/client-certificates/token/nope`],
      ['POST', `${hub.h2}/agents/enroll`],
      ['POST', `${hub.h}/agents/no-such-agent/renew`],
    ]) {
      const r = await stack.call(method, path, { body: method === 'POST' ? {} : undefined });
      t.is(r.status, 429, path);
      t.is(r.json.error, 'too_many_requests');
      t.true(retryAfter(r.headers) >= 1, `Retry-After ${r.headers.get('retry-after')}`);
    }
    t.is((await hub.call('GET', `${hub.h}/certificate-request-tokens`)).status, 200, 'authenticated routes are not limited by it');
  });
});

test.serial("what the CAs publish (/pki/: CRLs, CA certificates, OCSP) counts against the unauthenticated routes' limit", async (t) => {
  await withStack({ HUB_UNAUTH_RATE_LIMIT: '3', HUB_UNAUTH_RATE_WINDOW_SECONDS: '120' }, async (stack) => {
    t.is((await stack.call('GET', '/pki/no-such-hub/crl')).status, 404);
    t.is((await stack.call('GET', '/pki/no-such-hub/ca')).status, 404);
    const ocsp = await fetch(`${stack.baseUrl}/pki/no-such-hub/ocsp`, { method: 'POST', headers: { 'content-type': 'application/ocsp-request' }, body: 'x' });
    t.is(ocsp.status, 200);
    for (const [method, path] of [
      ['GET', '/pki/root/crl'],
      ['GET', '/pki/no-such-hub/ca'],
      ['POST', '/pki/no-such-hub/ocsp'],
      ['GET', '/pki/no-such-hub/ocsp/MAA'],
    ]) {
      const r = await stack.call(method, path, { raw: method === 'POST' ? 'x' : undefined, headers: { 'content-type': 'application/ocsp-request' } });
      t.is(r.status, 429, path);
      t.is(r.json.error, 'too_many_requests');
    }
  });
});

test.serial('a limit of 0 turns either limiter off', async (t) => {
  await withStack({ HUB_AUTH_FAILURE_LIMIT: '0', HUB_UNAUTH_RATE_LIMIT: '0' }, async (stack) => {
    for (let i = 0; i < 15; i++) t.is((await stack.call('GET', '/admin/v1/hubs/x', { auth: `Bearer wrong-${i}` })).status, 401);
    for (let i = 0; i < 15; i++) t.is((await stack.call('GET', '/hub/v2/public/.well-known/jwks.json')).status, 200);
  });
});

test.serial('the defaults leave ordinary use alone (dozens of failures and hundreds of JWKS reads)', async (t) => {
  await withStack({}, async (stack) => {
    for (let i = 0; i < 40; i++) t.is((await stack.call('GET', '/admin/v1/hubs/x', { auth: `Bearer wrong-${i}` })).status, 401);
    for (let i = 0; i < 300; i++) if ((await stack.call('GET', '/hub/v2/public/.well-known/jwks.json')).status !== 200) return t.fail(`JWKS read ${i}`);
  });
});
