import test from 'ava';
import type { Context } from 'koa';
import { ANSWERS, HttpError } from '../../api/errorAnswers.js';
import { mapError } from '../../api/middleware/errors.js';
import { decodeRefusal, encodeRefusal } from '../../shared/commands/pkiJobs.js';
import { conflict, DomainError, ERROR_CODES, invalidState, isDomainError, notAuthorized, rateLimited, type ErrorCode } from '../../shared/errors.js';

/** What mapError writes on a context: status, headers, body. */
function answer(err: unknown) {
  const headers: Record<string, string> = {};
  const ctx = { status: 0, body: undefined as unknown, state: { requestId: 'r1' }, set: (h: Record<string, string>) => Object.assign(headers, h) } as unknown as Context;
  mapError(ctx, err);
  return { status: ctx.status, body: ctx.body as { error: string; message: string }, headers };
}

test('every code of the catalogue has one HTTP answer, with the published error values only', (t) => {
  t.deepEqual(Object.keys(ANSWERS).sort(), Object.keys(ERROR_CODES).sort());
  const published = new Set(['invalid_request', 'unauthorized', 'not_found', 'forbidden', 'conflict', 'payload_too_large', 'unsupported_media_type', 'quota_exceeded', 'too_many_requests', 'unavailable']);
  for (const [code, { status, error }] of Object.entries(ANSWERS)) {
    t.true(published.has(error), `${code} -> ${error}`);
    t.true(status >= 400 && status < 600, code);
  }
});

test('domain errors become their answer; Retry-After where the error says when; a fault is a bare 500', (t) => {
  t.deepEqual(answer(invalidState('IPsec tunnel', 'NEW', 'delete')).body, { error: 'invalid_request', message: 'IPsec tunnel is NEW; cannot delete from state NEW' });
  t.is(answer(notAuthorized()).status, 403);
  t.is(answer(notAuthorized()).body.error, 'not_found');
  const limited = answer(rateLimited('too many failed authentications', 7));
  t.deepEqual([limited.status, limited.body.error, limited.headers['Retry-After']], [429, 'too_many_requests', '7']);
  t.deepEqual(answer(new HttpError(406, 'not_acceptable', 'send Accept: text/plain')).body, { error: 'not_acceptable', message: 'send Accept: text/plain' });
  const fault = answer(new TypeError('x is undefined'));
  t.is(fault.status, 500);
  t.notRegex(fault.body.message, /undefined/);
});

test("a worker's refusal crosses the queue with its code", (t) => {
  const back = decodeRefusal(encodeRefusal(conflict("a client certificate named 'x' already exists")));
  t.true(back instanceof DomainError);
  t.is(back?.code, 'EH_CONFLICT' satisfies ErrorCode);
  t.is(back?.message, "a client certificate named 'x' already exists");
  t.is(decodeRefusal('EH_MADE_UP: x'), undefined);
  t.is(decodeRefusal('TypeError: x'), undefined);
  t.true(isDomainError(back, 'EH_CONFLICT'));
  t.false(isDomainError(back, 'EH_NOT_FOUND'));
});
