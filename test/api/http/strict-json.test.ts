/**
 * JSON request bodies are read strictly: a key twice, bytes that are not UTF-8, a lone surrogate (raw or escaped) and
 * NUL are each a 400 invalid_request naming the property, and nothing is written.
 */
import test from 'ava';
import { parseStrictJson } from '../../../api/middleware/strictJson.js';
import { useStack } from '../../helpers/stack.js';
import type { ErrorCode } from '../../../shared/errors.js';
import { assertRefused } from '../../helpers/refusals.js';

const stack = useStack(test, { workers: false });

const hubCount = async () => (await stack.sql.query('SELECT count(*)::int AS n FROM hubs')).rows[0].n;
const post = (path: string, raw: string | Buffer) => stack.call('POST', path, { auth: stack.admin, raw, headers: { 'content-type': 'application/json' } });

test.serial('refused bodies name the property; nothing is written', async (t) => {
  const hub = await stack.hub();
  const before = await hubCount();
  const sample = (extra: string) =>
    `{"samples":[{"hubId":"${hub.hubId}","rx":1,"tx":1,"timestamp":"${new Date().toISOString()}"},{"hubId":"${hub.hubId}",${extra}"tx":1,"timestamp":"${new Date().toISOString()}"}]}`;
  // each refusal names the property (a JSON path) where the body is wrong
  const cases: [string, string, string | Buffer, ErrorCode, string][] = [
    ['a key twice', '/admin/v1/hubs', '{"name":"first","name":"second"}', 'EH_MALFORMED_JSON', '$.name'],
    ['a key twice, one of them escaped', '/admin/v1/hubs', '{"name":"first","n\\u0061me":"second"}', 'EH_MALFORMED_JSON', '$.name'],
    ['a key twice deep inside', '/admin/v1/usage', sample('"rx":1,"rx":2,'), 'EH_MALFORMED_JSON', '$.samples[1].rx'],
    [
      'bytes that are not UTF-8',
      '/admin/v1/hubs',
      Buffer.concat([Buffer.from('{"features":{},"name":"ab'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
      'EH_MALFORMED_JSON',
      '$.name',
    ],
    [
      'a surrogate encoded as UTF-8 (CESU)',
      '/admin/v1/hubs',
      Buffer.concat([Buffer.from('{"name":"ab'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]),
      'EH_MALFORMED_JSON',
      '$.name',
    ],
    [
      'an overlong form',
      '/admin/v1/hubs',
      Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]),
      'EH_MALFORMED_JSON',
      '$.name',
    ],
    ['an escaped lone surrogate', '/admin/v1/hubs', '{"name":"ab\\ud800"}', 'EH_INVALID_REQUEST', '$.name'],
    ['an escaped low surrogate alone', '/admin/v1/usage', sample('"rx":1,"note":["\\udc00x"],'), 'EH_INVALID_REQUEST', '$.samples[1].note[0]'],
    ['NUL', '/admin/v1/hubs', '{"name":"a\\u0000b"}', 'EH_INVALID_REQUEST', '$.name'],
    ['NUL in a key', '/admin/v1/hubs', '{"name":"ok","features":{"ip\\u0000sec":true}}', 'EH_INVALID_REQUEST', '$.features.ip'],
  ];
  for (const [, path, body, code, names] of cases) assertRefused(t, await post(path, body), 400, 'invalid_request', code, names);
  t.is(await hubCount(), before, 'no hub was made');
  t.is((await stack.sql.query('SELECT count(*)::int AS n FROM usage_samples')).rows[0].n, 0, 'no sample was stored');
});

test.serial(
  'strict is not stricter than JSON: pairs of surrogates, U+FFFD itself, equal keys in different objects, keys like __proto__ and escapes pass',
  async (t) => {
    const r = await post('/admin/v1/hubs', '{"name":"emoji-\\ud83d\\ude00-\uFFFD-\u00e9", "features": {"ipsec": false}}');
    t.is(r.status, 201, r.text);
    t.is(r.json.name, 'emoji-\u{1F600}-\uFFFD-\u00e9');
    // the same key in sibling objects, and a string holding `": "` (which a scan that lost track of strings would count as a key)
    const hub = await stack.hub();
    const at = new Date().toISOString();
    const samples = `{"samples":[{"hubId":"${hub.hubId}","rx":1,"tx":2,"timestamp":"${at}"},{"hubId":"${hub.hubId}","rx":3,"tx":4,"timestamp":"${at}"}]}`;
    t.is((await post('/admin/v1/usage', samples)).status, 202);
    const tricky = await post('/admin/v1/hubs', '{"name":"q\\": \\"x", "features":{}}');
    t.is(tricky.status, 201, tricky.text);
    t.is(tricky.json.name, 'q": "x');
  },
);

test('keys named __proto__ are counted like any other (JSON.parse makes them own properties)', (t) => {
  const value = parseStrictJson(Buffer.from('{"__proto__":{"a":1},"b":{"__proto__":2}}')) as Record<string, unknown>;
  t.deepEqual(Object.keys(value), ['__proto__', 'b']);
  t.throws(() => parseStrictJson(Buffer.from('{"__proto__":1,"__proto__":2}')), { message: /property '\$\.__proto__' appears more than once/ });
  t.throws(() => parseStrictJson(Buffer.from('{"a":[{"x":1},{"x":2,"x":3}]}')), { message: /property '\$\.a\[1\]\.x' appears more than once/ });
});

test('nesting: up to 64 levels is read, deeper is a 400 before any walk of the value (100,000 levels answered, not a stack overflow)', (t) => {
  const nested = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
  t.truthy(parseStrictJson(Buffer.from(nested(64))));
  t.deepEqual(
    parseStrictJson(Buffer.from(`{"s":"${'['.repeat(1000)}\\"{{"}`)),
    { s: `${'['.repeat(1000)}"{{` },
    'brackets in strings, escaped quotes included, do not count',
  );
  for (const body of [nested(65), '['.repeat(100_000) + ']'.repeat(100_000), Buffer.concat([Buffer.from('['.repeat(100_000)), Buffer.from([0xff])])]) {
    const err = t.throws(() => parseStrictJson(Buffer.from(body)));
    t.is((err as { code?: string }).code, 'EH_MALFORMED_JSON');
    t.is(err?.message, 'request body is nested more than 64 levels deep');
  }
});
