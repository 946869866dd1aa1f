/**
 * Bad input never gets a 5xx: every operation of the API (the OpenAPI document's list), with its path parameters
 * naming real resources of the hub (so that the handlers run past their look-ups) or odd strings, is sent bodies
 * and query strings of the wrong shape: each documented field set to each of a list of hostile values, the whole body
 * replaced by a non-object, and each query parameter likewise. Every answer must be below 500 and, when a refusal,
 * the API's `{error, message}`. Deletions run last, so the other operations meet existing resources.
 */
import test from 'ava';
import type { ZodType } from 'zod';
import type { Operation } from '../../../api/openapi/operation.js';
import { rawConversation } from '../../helpers/raw.js';
import { type Sweep, sweepFixture } from '../../helpers/apiSweep.js';
import { useStack } from '../../helpers/stack.js';

// the throttles would answer 429 to most of the sweep after its first refusals: off, so every request meets its handler
const stack = useStack(test, { env: { HUB_AUTH_FAILURE_LIMIT: '0', HUB_UNAUTH_RATE_LIMIT: '0' } });
let sweep: Sweep;
test.before(async () => {
  sweep = await sweepFixture(stack);
});
const pathOf = (op: Operation, odd?: string) => sweep.pathOf(op, odd);
const authOf = (op: Operation) => sweep.authOf(op);
const baseOf = (op: Operation) => sweep.baseOf(op);
const ordered = () => sweep.ordered();

/** The hostile values each field gets in turn. */
const HOSTILE: unknown[] = [
  null,
  0,
  -1,
  1.5,
  1e308,
  Number.MAX_SAFE_INTEGER + 2,
  true,
  '',
  ' ',
  'x'.repeat(5000),
  '\u0000',
  '../../../etc/passwd',
  '%00%2e%2e/',
  'ünïcødé 🚀',
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  '-1',
  '1e999',
  'http://[::1',
  'file:///etc/passwd',
  [],
  [null],
  ['x', 1, {}],
  {},
  { $ne: null },
  { __proto__: { polluted: true } },
];
/** Fields whose values the test helpers register as secrets (test/helpers/logScan.ts). */
const SECRET_LIKE = new Set(['jwt', 'preSharedKey', 'clientSecret', 'privateKey', 'privateKeyPem', 'token']);
/** Whole bodies of the wrong kind. */
const BODIES: unknown[] = [null, [], 'text', 42, true, { '': 1 }, Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`k${i}`, i]))];

/** The documented fields of a body schema (an object's shape, through pipes, defaults and optionals). */
function fieldsOf(schema: ZodType | undefined): string[] {
  let s = schema as unknown as
    | { shape?: Record<string, unknown>; def?: { in?: unknown; innerType?: unknown; schema?: unknown; options?: unknown[] } }
    | undefined;
  for (let i = 0; s && i < 6; i++) {
    if (s.shape) return Object.keys(s.shape);
    if (s.def?.options) return [...new Set(s.def.options.flatMap((o) => fieldsOf(o as ZodType)))];
    s = (s.def?.in ?? s.def?.innerType ?? s.def?.schema) as typeof s;
  }
  return [];
}

function assertAnswer(t: import('ava').ExecutionContext, what: string, r: { status: number; json: any; text: string }, failures: string[]): void {
  if (r.status === 429) failures.push(`${what}: throttled, so not tested: ${r.text.slice(0, 100)}`);
  else if (r.status >= 500) failures.push(`${what}: ${r.status} ${r.text.slice(0, 300)}`);
  else if (r.status >= 400 && (typeof r.json?.error !== 'string' || typeof r.json?.message !== 'string'))
    failures.push(`${what}: ${r.status} without {error, message}: ${r.text.slice(0, 200)}`);
  t.pass();
}

test.serial('hostile bodies and query strings on every operation: never a 5xx, every refusal {error, message}', async (t) => {
  const failures: string[] = [];
  let sent = 0;
  for (const op of ordered()) {
    if (op.method === 'delete') continue;
    const method = op.method.toUpperCase();
    const path = pathOf(op);
    const call = (body: unknown, query = '') => stack.call(method, `${path}${query}`, { auth: authOf(op), body, contract: false });
    if (op.body) {
      for (const body of BODIES) {
        assertAnswer(t, `${method} ${path} body ${JSON.stringify(body)?.slice(0, 40)}`, await call(body), failures);
        sent++;
      }
      for (const field of fieldsOf(op.body)) {
        for (const hostile of HOSTILE) {
          // the test helpers take what is sent in a secret's field for a secret and look for it in the logs: there a
          // string of the list is made the field's own, so that the same string logged from another field (a path,
          // a refused target) is not taken for it
          const value = typeof hostile === 'string' && SECRET_LIKE.has(field) ? `${hostile}-${field}-sent` : hostile;
          assertAnswer(t, `${method} ${path} ${field}=${JSON.stringify(value)?.slice(0, 40)}`, await call({ ...baseOf(op), [field]: value }), failures);
          sent++;
        }
      }
    }
    const queryFields = [...Object.keys(op.query?.shape ?? {}), ...(op.paged ? ['page', 'size', 'sort'] : [])];
    for (const field of queryFields) {
      for (const value of ['', '-1', '1e999', 'x'.repeat(3000), '%00', '[]', '0', '99999999999999999999', '__proto__', 'name,desc,asc', 'ünï']) {
        const query = `?${encodeURIComponent(field)}=${encodeURIComponent(value)}&${encodeURIComponent(field)}=twice`;
        assertAnswer(t, `${method} ${path}${query.slice(0, 60)}`, await call(undefined, query), failures);
        sent++;
      }
    }
  }
  t.true(sent > 1000, `${sent} requests`);
  t.deepEqual(failures, []);
});

test.serial('odd path parameters on every operation: never a 5xx', async (t) => {
  const failures: string[] = [];
  const odd = ['x'.repeat(2000), '..', '%', '\u0000', 'ünï', ' ', '1e999', '00000000-0000-0000-0000-000000000000', "'", '{}', 'a/b'];
  for (const op of ordered()) {
    if (!/:(?!hubId)[A-Za-z]/.test(Array.isArray(op.path) ? op.path[0] : op.path)) continue;
    for (const value of odd) {
      const path = pathOf(op, value);
      const r = await stack.call(op.method.toUpperCase(), path, { auth: authOf(op), body: op.body ? {} : undefined, contract: false });
      assertAnswer(t, `${op.method.toUpperCase()} ${path.slice(0, 120)}`, r, failures);
    }
  }
  t.deepEqual(failures, []);
});

test.serial('hostile raw bodies: deep nesting, odd encodings and media types: never a 5xx', async (t) => {
  const failures: string[] = [];
  const deep = (n: number, open: string, close: string) => `${open.repeat(n)}${close.repeat(n)}`;
  const raws: [string, string | Buffer, string][] = [
    ['arrays nested 100,000 deep', deep(100_000, '[', ']'), 'application/json'],
    ['objects nested 50,000 deep', `${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}`, 'application/json'],
    ['arrays nested 5,000 deep in a field', `{"name":${deep(5_000, '[', ']')}}`, 'application/json'],
    [
      'arrays nested 100,000 deep, then bytes that are not UTF-8',
      Buffer.concat([Buffer.from(deep(100_000, '[', ']')), Buffer.from([0xff])]),
      'application/json',
    ],
    ['brackets inside a string, nested 100,000 deep', `{"name":"${'['.repeat(100_000)}"}`, 'application/json'],
    ['objects nested 64 deep (the most allowed)', `${'{"a":'.repeat(64)}1${'}'.repeat(64)}`, 'application/json'],
    ['a BOM before the JSON', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"name":"x"}')]), 'application/json'],
    ['UTF-16', Buffer.from('{"name":"x"}', 'utf16le'), 'application/json; charset=utf-16'],
    ['latin-1 bytes', Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), 'application/json'],
    ['a lone surrogate escaped', '{"name":"\\ud800"}', 'application/json'],
    ['NUL escaped', '{"name":"a\\u0000b"}', 'application/json'],
    ['a number of 5,000 digits', `{"name":${'9'.repeat(5000)}}`, 'application/json'],
    ['a duplicate key', '{"name":"a","name":"b"}', 'application/json'],
    ['JSON sent as text', '{"name":"x"}', 'text/plain'],
    ['JSON sent as a form', 'name=x', 'application/x-www-form-urlencoded'],
    ['an odd media type', '{"name":"x"}', 'application/json;;; charset="'],
    ['empty', '', 'application/json'],
  ];
  const targets = ordered().filter((op) => op.body && op.method !== 'delete');
  for (const op of targets) {
    const path = pathOf(op);
    for (const [what, raw, type] of raws) {
      const r = await stack.call(op.method.toUpperCase(), path, { auth: authOf(op), raw, headers: { 'content-type': type }, contract: false });
      assertAnswer(t, `${op.method.toUpperCase()} ${path} ${what}`, r, failures);
    }
  }
  t.deepEqual(failures, []);
});

test.serial("hostile request heads, byte for byte: every answer below 500, the API's own refusals {error, message}", async (t) => {
  const port = Number(new URL(stack.baseUrl).port);
  const basic = (s: string) => `Basic ${Buffer.from(s, 'latin1').toString('base64')}`;
  const get = `${sweep.hub.h2}/certificate-request-tokens`;
  const post = `${sweep.hub.h2}/environments`;
  const head = (lines: string[], body = '') => Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), Buffer.from(body)]);
  const authHeads = [
    'Basic !!!',
    'Basic',
    'Basic ',
    basic('admin'),
    basic(':'),
    basic(`${sweep.hub.username}:`),
    basic(`:${sweep.hub.token}`),
    basic(`${sweep.hub.username}:${'x'.repeat(8000)}`),
    basic(`${sweep.hub.username}\u00ff:${sweep.hub.token}`),
    `Bearer ${'a'.repeat(12_000)}`,
    'Bearer',
    'Bearer  ',
    `Bearer ${sweep.hub.token} extra`,
    `bearer ${sweep.hub.token}`,
    `Bearer\t${sweep.hub.token}`,
    'Negotiate YIIB',
    `Bearer ${sweep.hub.token}\u00ff`,
    `Bearer ${stack.adminToken}`,
  ];
  const requests: [string, Buffer][] = [
    ...authHeads.map((a): [string, Buffer] => [
      `Authorization: ${a.slice(0, 40)}`,
      head([`GET ${get} HTTP/1.1`, 'Host: x', `Authorization: ${a}`, 'Connection: close']),
    ]),
    [
      'two Authorization headers',
      head([`GET ${get} HTTP/1.1`, 'Host: x', `Authorization: Bearer ${sweep.hub.token}`, 'Authorization: Bearer other', 'Connection: close']),
    ],
    ['no Host', head([`GET ${get} HTTP/1.1`, `Authorization: Bearer ${sweep.hub.token}`, 'Connection: close'])],
    ['a Host of 4,000 bytes', head([`GET ${get} HTTP/1.1`, `Host: ${'h'.repeat(4000)}`, `Authorization: Bearer ${sweep.hub.token}`, 'Connection: close'])],
    ['an absolute-form target', head([`GET http://evil.example${get} HTTP/1.1`, 'Host: x', `Authorization: Bearer ${sweep.hub.token}`, 'Connection: close'])],
    ['a target with %zz', head([`GET ${get}/%zz HTTP/1.1`, 'Host: x', `Authorization: Bearer ${sweep.hub.token}`, 'Connection: close'])],
    [
      'a target with encoded dot segments',
      head([`GET ${sweep.hub.h2}/..%2f..%2f..%2fadmin/v1/hubs HTTP/1.1`, 'Host: x', `Authorization: Bearer ${sweep.hub.token}`, 'Connection: close']),
    ],
    ['OPTIONS *', head(['OPTIONS * HTTP/1.1', 'Host: x', 'Connection: close'])],
    ['an unknown method', head([`BREW ${get} HTTP/1.1`, 'Host: x', `Authorization: Bearer ${sweep.hub.token}`, 'Connection: close'])],
    ['HTTP/1.0 without Host', head([`GET ${get} HTTP/1.0`, `Authorization: Bearer ${sweep.hub.token}`])],
    [
      'an odd Accept',
      head([`GET ${get} HTTP/1.1`, 'Host: x', 'Accept: */*;q=abc, text/html;level=', `Authorization: Bearer ${sweep.hub.token}`, 'Connection: close']),
    ],
    ['Accept text/html only', head([`GET ${get} HTTP/1.1`, 'Host: x', 'Accept: text/html', `Authorization: Bearer ${sweep.hub.token}`, 'Connection: close'])],
    [
      'an odd cookie',
      head([
        `GET ${get} HTTP/1.1`,
        'Host: x',
        `Cookie: ${'a=%zz; '.repeat(500)}edgehub_queues=\u00ff`,
        `Authorization: Bearer ${sweep.hub.token}`,
        'Connection: close',
      ]),
    ],
    [
      'X-Forwarded-For noise',
      head([
        `GET ${get} HTTP/1.1`,
        'Host: x',
        'X-Forwarded-For: ::ffff:not-an-ip, , 999.1.1.1',
        'X-Forwarded-Proto: gopher',
        `Authorization: Bearer ${sweep.hub.token}`,
        'Connection: close',
      ]),
    ],
    [
      'Expect: 100-continue',
      head(
        [
          `POST ${post} HTTP/1.1`,
          'Host: x',
          'Expect: 100-continue',
          'Content-Type: application/json',
          'Content-Length: 2',
          `Authorization: Bearer ${sweep.hub.token}`,
          'Connection: close',
        ],
        '{}',
      ),
    ],
    [
      'an unknown Expect',
      head(
        [
          `POST ${post} HTTP/1.1`,
          'Host: x',
          'Expect: teapot',
          'Content-Type: application/json',
          'Content-Length: 2',
          `Authorization: Bearer ${sweep.hub.token}`,
          'Connection: close',
        ],
        '{}',
      ),
    ],
    [
      'a negative Content-Length',
      head(
        [
          `POST ${post} HTTP/1.1`,
          'Host: x',
          'Content-Type: application/json',
          'Content-Length: -1',
          `Authorization: Bearer ${sweep.hub.token}`,
          'Connection: close',
        ],
        '{}',
      ),
    ],
    [
      'two Content-Lengths',
      head(
        [
          `POST ${post} HTTP/1.1`,
          'Host: x',
          'Content-Type: application/json',
          'Content-Length: 2',
          'Content-Length: 3',
          `Authorization: Bearer ${sweep.hub.token}`,
          'Connection: close',
        ],
        '{}',
      ),
    ],
    [
      'chunked with a bad chunk',
      head(
        [
          `POST ${post} HTTP/1.1`,
          'Host: x',
          'Content-Type: application/json',
          'Transfer-Encoding: chunked',
          `Authorization: Bearer ${sweep.hub.token}`,
          'Connection: close',
        ],
        'zz\r\n{}\r\n0\r\n\r\n',
      ),
    ],
    [
      'chunked and Content-Length',
      head(
        [
          `POST ${post} HTTP/1.1`,
          'Host: x',
          'Content-Type: application/json',
          'Transfer-Encoding: chunked',
          'Content-Length: 2',
          `Authorization: Bearer ${sweep.hub.token}`,
          'Connection: close',
        ],
        '2\r\n{}\r\n0\r\n\r\n',
      ),
    ],
    [
      'a gzip body that is not gzip',
      head(
        [
          `POST ${post} HTTP/1.1`,
          'Host: x',
          'Content-Type: application/json',
          'Content-Encoding: gzip',
          'Content-Length: 2',
          `Authorization: Bearer ${sweep.hub.token}`,
          'Connection: close',
        ],
        '{}',
      ),
    ],
    [
      'a body on GET',
      head(
        [
          `GET ${get} HTTP/1.1`,
          'Host: x',
          'Content-Type: application/json',
          'Content-Length: 9',
          `Authorization: Bearer ${sweep.hub.token}`,
          'Connection: close',
        ],
        '{"a":"b"}',
      ),
    ],
  ];
  const failures: string[] = [];
  for (const [what, bytes] of requests) {
    const { text } = await rawConversation(port, bytes, { timeoutMs: 3000 });
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0);
    // a request node:http itself refuses (a malformed head) ends with its bare 400 and the connection closed
    if (status === 0 || status >= 500) failures.push(`${what}: ${text.slice(0, 200) || '(no answer)'}`);
    else if (status >= 400 && /Edgehub-Error-Code/i.test(text) && !/\{"error":"[a-z_]+","message":"[^"]+/.test(text))
      failures.push(`${what}: ${status} without {error, message}`);
    t.pass();
  }
  t.deepEqual(failures, []);
});
