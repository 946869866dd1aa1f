/**
 * The ACME client (acme-client, configured in shared/providers/certificateIssuerAcme.ts) against a hostile CA on a
 * real socket: an answer larger than the bound is refused, a redirect is not followed, a 503 is retried only after
 * the CA's Retry-After, and a CA at a denied address is not contacted. The happy path runs against Pebble
 * (test/api/custom-frontends/acme.test.ts).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { ACME_MAX_BODY_BYTES, acmeCertificateIssuer, newAcmeAccountKey } from '../../../shared/providers/certificateIssuerAcme.js';
import { useStack } from '../../helpers/stack.js';

type Answer = (req: http.IncomingMessage, res: http.ServerResponse) => void;

let ca: http.Server;
let answer: Answer = (_req, res) => res.writeHead(500).end();
const seen: { method: string; url: string; at: number }[] = [];
/** Where a redirect points: a second server that must never be asked anything. */
let elsewhere: http.Server;
let elsewhereHits = 0;
let caUrl = '';

const listen = (server: http.Server) => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

test.before(async () => {
  ca = http.createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', at: Date.now() });
    req.resume();
    answer(req, res);
  });
  elsewhere = http.createServer((_req, res) => {
    elsewhereHits++;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  const [port] = await Promise.all([listen(ca), listen(elsewhere)]);
  caUrl = `http://127.0.0.1:${port}/dir`;
});
useStack(test, { workers: false });

test.after.always(async () => {
  ca?.close();
  elsewhere?.close();
});

const zone = { publish: async () => undefined, withdraw: async () => undefined, lookup: async () => [] };
const issue = (directoryUrl = caUrl) =>
  acmeCertificateIssuer({ directoryUrl }, { keyPem: newAcmeAccountKey() }, zone).issue({
    hostname: 'hostile.example.com',
    validationName: 'x',
    validationValue: 'x',
  });

test.serial('an answer larger than the bound is refused, not read whole', async (t) => {
  seen.length = 0;
  let written = 0;
  answer = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const pump = () => {
      while (written < 8 * ACME_MAX_BODY_BYTES && res.write(chunk)) written += chunk.length;
      if (written < 8 * ACME_MAX_BODY_BYTES) res.once('drain', pump);
      else res.end();
    };
    res.on('close', () => res.removeAllListeners('drain'));
    pump();
  };
  const err = await t.throwsAsync(issue());
  t.regex(err!.message, /^ACME: no usable answer from the CA after 4 attempts \(ERR_BAD_RESPONSE maxContentLength size of 1048576 exceeded\)/);
  t.is(seen.length, 4, 'acme-client retries an answer-less failure 3 times');
  t.true(written < 4 * 8 * ACME_MAX_BODY_BYTES, `the CA wrote ${written} bytes: every attempt was cut short`);
});

test.serial('a redirect is not followed (it would leave the egress check behind)', async (t) => {
  seen.length = 0;
  elsewhereHits = 0;
  const target = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/dir`;
  answer = (_req, res) => res.writeHead(302, { location: target }).end();
  const err = await t.throwsAsync(issue());
  t.regex(err!.message, /^ACME: /);
  t.is(elsewhereHits, 0);
});

test.serial("a 503 is retried after the CA's Retry-After, not before", async (t) => {
  seen.length = 0;
  answer = (_req, res) => {
    if (seen.length === 1)
      return void res
        .writeHead(503, { 'retry-after': '2', 'content-type': 'application/problem+json' })
        .end('{"type":"urn:ietf:params:acme:error:serverInternal"}');
    res.writeHead(404).end();
  };
  await t.throwsAsync(issue());
  t.true(seen.length >= 2, `${seen.length} requests`);
  const gap = seen[1].at - seen[0].at;
  t.true(gap >= 1900, `retried after ${gap} ms`);
});

test.serial('a CA at an address the egress policy denies is never contacted', async (t) => {
  const err = await t.throwsAsync(issue('http://169.254.169.254/dir'));
  t.regex(err!.message, /169\.254\.169\.254/);
  t.regex(err!.message, /egress|denied|not allowed/i);
});
