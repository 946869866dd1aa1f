/**
 * The queue UI (/admin/queues): a random server-side session instead of a fixed cookie, and no way to add a job
 * through it, whatever the body's type or the credentials sent.
 */
import test from 'ava';
import { Redis } from 'ioredis';
import { queue } from '../../../domain/jobs/queues.js';
import { useStack } from '../../helpers/stack.js';
import { assertRefused } from '../../helpers/refusals.js';

const stack = useStack(test, { workers: false });
const basic = () => `Basic ${Buffer.from(`admin:${stack.adminToken}`).toString('base64')}`;
const page = (headers: Record<string, string>) => stack.call('GET', '/admin/queues', { headers: { accept: 'text/html', ...headers }, contract: false });
const cookieOf = (setCookie: string | null) => (setCookie ?? '').split(';')[0];
const ADD = '/admin/queues/api/queues/metrics/add';
const JOB = { name: 'metrics.rollUp', data: { hubId: null, payload: {} }, options: {} };

async function metricsJobs(): Promise<number> {
  const counts = await queue('metrics').getJobCounts('wait', 'active', 'completed', 'failed', 'delayed', 'prioritized', 'waiting-children');
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

test.serial('each sign-in gets its own random session cookie (HttpOnly, SameSite=Strict, /admin/queues, expiring); Redis holds only its digest', async (t) => {
  const first = await page({ authorization: basic() });
  t.is(first.status, 200);
  const setCookie = first.headers.get('set-cookie') ?? '';
  t.regex(setCookie, /^edgehub_queues=[\w-]{43}; path=\/admin\/queues; expires=[^;]+; samesite=strict; httponly/i);
  t.false(setCookie.includes(stack.adminToken), 'the cookie does not carry the token');
  const second = await page({ authorization: basic() });
  t.not(cookieOf(second.headers.get('set-cookie')), cookieOf(setCookie), 'not a function of the token: a new value at each sign-in');
  const cookie = cookieOf(setCookie);
  // the page's scripts and its API calls carry only the cookie; a request with a live session gets no new one
  const api = await stack.call('GET', '/admin/queues/api/queues', { headers: { cookie }, contract: false });
  t.is(api.status, 200);
  t.is(api.headers.get('set-cookie'), null);
  t.is((await stack.call('GET', '/admin/queues/api/queues', { headers: { cookie: 'edgehub_queues=forged' }, contract: false })).status, 401);
  t.is((await stack.call('GET', '/admin/v1/hubs', { headers: { cookie } })).status, 401, 'the cookie opens nothing else');

  const redis = new Redis(process.env.REDIS_URL!);
  try {
    const keys = await redis.keys('*queues-session:*');
    t.true(keys.length >= 2);
    const value = cookie.split('=')[1];
    for (const key of keys) {
      t.false(key.includes(value), 'only the digest is stored');
      const ttl = await redis.ttl(key);
      t.true(ttl > 0 && ttl <= 8 * 3600, 'the session expires');
    }
  } finally {
    redis.disconnect();
  }
});

test.serial(
  'no job is added through the queue UI: form, text and multipart bodies with the cookie or the token; JSON from another origin; JSON from its own origin (read-only)',
  async (t) => {
    const cookie = cookieOf((await page({ authorization: basic() })).headers.get('set-cookie'));
    const origin = stack.baseUrl;
    const form = new URLSearchParams({ name: JOB.name, 'data[hubId]': '', 'data[payload][x]': '1' }).toString();
    const text = `{"name":"metrics.rollUp","data":{"payload":{"x":"=1"}}}`;
    const boundary = 'xyzzy';
    const multipart = `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nmetrics.rollUp\r\n--${boundary}--\r\n`;
    const bodies: [string, string][] = [
      ['application/x-www-form-urlencoded', form],
      ['text/plain', text],
      [`multipart/form-data; boundary=${boundary}`, multipart],
    ];
    for (const [type, raw] of bodies) {
      for (const credentials of [{ cookie }, { authorization: basic() }, { authorization: stack.admin, cookie }] as Record<string, string>[]) {
        const r = await stack.call('POST', ADD, { raw, headers: { 'content-type': type, origin, ...credentials }, contract: false });
        // the cookie alone is not the token (401); the token with a form body is refused (Basic: 415 on every route,
        // api/middleware/crossSite.ts; Bearer: 403 by the queue UI's own rules)
        const sent = credentials.authorization?.split(' ')[0];
        const expected = sent === 'Basic' ? [415, 'unsupported_media_type'] : sent === 'Bearer' ? [403, 'forbidden'] : [401, 'unauthorized'];
        t.deepEqual([r.status, r.json.error], expected, `${type} with ${Object.keys(credentials).join('+')}`);
      }
    }
    // JSON with the cookie only: the token must be in the header
    const json = JSON.stringify(JOB);
    const cookieOnly = await stack.call('POST', ADD, { raw: json, headers: { 'content-type': 'application/json', origin, cookie }, contract: false });
    t.is(cookieOnly.status, 401);
    // JSON with the token from another origin, a share's, or none
    for (const other of ['http://evil.example', 'http://evil.share.localhost:8080', 'null', '']) {
      const r = await stack.call('POST', ADD, {
        raw: json,
        auth: stack.admin,
        headers: { 'content-type': 'application/json', ...(other ? { origin: other } : {}) },
        contract: false,
      });
      assertRefused(t, r, 403, 'forbidden', 'EH_ORIGIN_REFUSED');
    }
    // everything right: bull-board's read-only queues refuse it
    const right = await stack.call('POST', ADD, { raw: json, auth: stack.admin, headers: { 'content-type': 'application/json', origin }, contract: false });
    t.is(right.status, 405);
    for (const path of [
      '/admin/queues/api/queues/metrics/retry/failed',
      '/admin/queues/api/queues/metrics/clean/completed',
      '/admin/queues/api/queues/metrics/pause',
    ]) {
      const r = await stack.call('PUT', path, { raw: '{}', auth: stack.admin, headers: { 'content-type': 'application/json', origin }, contract: false });
      t.true(r.status === 405 || r.status === 404, `${path}: ${r.status}`);
    }
    t.is(await metricsJobs(), 0, 'no job was added');
  },
);

test.serial('sign-out revokes every queue UI session and clears the cookie; it is a write like any other', async (t) => {
  const cookie = cookieOf((await page({ authorization: basic() })).headers.get('set-cookie'));
  const other = cookieOf((await page({ authorization: basic() })).headers.get('set-cookie'));
  t.is((await stack.call('GET', '/admin/queues/api/queues', { headers: { cookie }, contract: false })).status, 200);
  // a cross-site form cannot sign the operator out either
  const forged = await stack.call('POST', '/admin/queues/sign-out', {
    raw: '',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'http://evil.example', cookie },
    contract: false,
  });
  assertRefused(t, forged, 403, 'forbidden', 'EH_ORIGIN_REFUSED');
  t.is((await stack.call('GET', '/admin/queues/api/queues', { headers: { cookie }, contract: false })).status, 200);

  const out = await stack.call('POST', '/admin/queues/sign-out', {
    raw: '{}',
    auth: stack.admin,
    headers: { 'content-type': 'application/json', origin: stack.baseUrl, cookie },
    contract: false,
  });
  t.is(out.status, 200);
  t.true(out.json.revoked >= 2);
  t.regex(out.headers.get('set-cookie') ?? '', /^edgehub_queues=; path=\/admin\/queues; expires=Thu, 01 Jan 1970/i);
  for (const c of [cookie, other])
    t.is((await stack.call('GET', '/admin/queues/api/queues', { headers: { cookie: c }, contract: false })).status, 401, 'revoked');
});
