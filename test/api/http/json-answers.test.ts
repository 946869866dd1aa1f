import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import Koa from 'koa';
import { LARGE_JSON_CHARS, requestEdge } from '../../../api/middleware/requestEdge.js';
import { conflict } from '../../../shared/errors.js';

// JSON answers leave through requestEdge: a large one as a Buffer it encodes once, a small one as Koa sends it. Either
// way the client must get the same bytes, length and type as Koa's own JSON answer.

const samples = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    rx: i * 7919,
    tx: 2 ** 40 + i,
    timestamp: new Date(Date.UTC(2026, 10, 22, i % 24)).toISOString(),
    note: i % 97 === 0 ? 'ünïcødé ✓ 🚀' : null,
  }));
const large = { hubId: 'hub-1', sparklines: [{ scope: 'share', id: 'shr1', period: 'P1D', samples: samples(2_000) }] };
const small = { id: 'tok-1', name: 'ä small one' };

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

let base: { host: string; port: number };
let server: http.Server;
test.before(async () => {
  const app = new Koa();
  app.silent = true;
  app.use(requestEdge);
  app.use(async (ctx) => {
    if (ctx.path === '/large') ctx.body = large;
    else if (ctx.path === '/large-array') ctx.body = large.sparklines[0].samples;
    else if (ctx.path === '/small') ctx.body = small;
    else if (ctx.path === '/typed') {
      ctx.body = large;
      ctx.type = 'application/jwk-set+json';
    } else if (ctx.path === '/text') ctx.body = 'plain text'.repeat(5_000);
    else if (ctx.path === '/bytes') ctx.body = Buffer.alloc(LARGE_JSON_CHARS * 2, 7);
    else if (ctx.path === '/fail') throw conflict('x'.repeat(LARGE_JSON_CHARS));
  });
  server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = { host: '127.0.0.1', port: (server.address() as AddressInfo).port };
});
test.after.always(() => server?.close());

function request(method: string, path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ ...base, method, path }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const expectJson = (t: import('ava').ExecutionContext, answer: Answer, value: unknown, type = 'application/json; charset=utf-8') => {
  const text = JSON.stringify(value);
  t.is(answer.status, 200);
  t.is(answer.headers['content-type'], type);
  t.is(answer.headers['content-length'], String(Buffer.byteLength(text)));
  t.is(answer.headers['transfer-encoding'], undefined);
  t.true(answer.body.equals(Buffer.from(text)), 'the body is the JSON text, byte for byte (multi-byte characters included)');
  t.truthy(answer.headers['x-request-id']);
  t.is(answer.headers['cache-control'], 'no-store');
};

test('a large JSON answer (object or array, multi-byte characters) arrives whole with its exact length and type', async (t) => {
  t.true(JSON.stringify(large).length > LARGE_JSON_CHARS * 4);
  expectJson(t, await request('GET', '/large'), large);
  expectJson(t, await request('GET', '/large-array'), large.sparklines[0].samples);
});

test('a small JSON answer is unchanged', async (t) => {
  expectJson(t, await request('GET', '/small'), small);
});

test('a JSON answer keeps the JSON media type its route chose', async (t) => {
  expectJson(t, await request('GET', '/typed'), large, 'application/jwk-set+json');
});

test('HEAD of a large JSON answer states its length and sends no body', async (t) => {
  const answer = await request('HEAD', '/large');
  t.is(answer.status, 200);
  t.is(answer.headers['content-length'], String(Buffer.byteLength(JSON.stringify(large))));
  t.is(answer.body.length, 0);
});

test('text, Buffer and large error answers are sent as before', async (t) => {
  const text = await request('GET', '/text');
  t.is(text.headers['content-type'], 'text/plain; charset=utf-8');
  t.is(text.body.toString(), 'plain text'.repeat(5_000));
  const bytes = await request('GET', '/bytes');
  t.is(bytes.headers['content-type'], 'application/octet-stream');
  t.true(bytes.body.equals(Buffer.alloc(LARGE_JSON_CHARS * 2, 7)));
  const failed = await request('GET', '/fail');
  t.is(failed.status, 409);
  t.deepEqual(JSON.parse(failed.body.toString()), { error: 'conflict', message: 'x'.repeat(LARGE_JSON_CHARS) });
  t.is(failed.headers['content-length'], String(failed.body.length));
  const missing = await request('GET', '/nothing');
  t.is(missing.status, 404);
  t.is(JSON.parse(missing.body.toString()).error, 'not_found');
});
