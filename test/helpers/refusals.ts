/**
 * Asserting a refusal by what a client can rely on: the status, the body's `error` value and the stable code in the
 * Edgehub-Error-Code header (docs/errors.md), never the wording of the message. Where the message's content is the
 * point of a test (the property, the quota or the state it names), `names` asserts those exact texts in it.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ExecutionContext } from 'ava';
import { ANSWERS, type ErrorCode } from '../../shared/errors.js';

/** Any of the tests' answers: fetch's (Headers) or node's (IncomingHttpHeaders), with the parsed JSON body. */
export interface Answered {
  status: number;
  json?: unknown;
  headers: Headers | IncomingHttpHeaders | Record<string, string | string[] | undefined>;
}

/** The Edgehub-Error-Code header of an answer, or undefined. */
export function errorCode(res: Answered): string | undefined {
  const headers = res.headers;
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get('edgehub-error-code') ?? undefined;
  const value = (headers as IncomingHttpHeaders)['edgehub-error-code'];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The answer is a refusal with this status, `error` and code, and a body of exactly `{error, message}`; returns the
 * message. `names`: texts the message must contain (for a test whose point is what the message names).
 */
export function assertRefused(t: ExecutionContext, res: Answered, status: number, error: string, code: ErrorCode, names?: string | string[]): string {
  const body = res.json as { error?: unknown; message?: unknown } | undefined;
  const seen = `${res.status} ${errorCode(res)} ${JSON.stringify(body)}`;
  t.is(res.status, status, seen);
  t.is(body?.error, error, seen);
  t.is(errorCode(res), code, seen);
  t.deepEqual(Object.keys(body ?? {}).sort(), ['error', 'message'], seen);
  // the catalogue answers the code with this status and error (a test cannot expect what the table does not say)
  t.deepEqual([ANSWERS[code].status, ANSWERS[code].error], [status, error], `shared/errors.ts answers ${code}`);
  const message = typeof body?.message === 'string' ? body.message : '';
  for (const name of names === undefined ? [] : [names].flat()) t.true(message.includes(name), `the message names ${name}: ${message}`);
  return message;
}
