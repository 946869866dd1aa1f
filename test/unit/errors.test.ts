import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import type { Context } from 'koa';
import { HttpError } from '../../api/httpError.js';
import { isDatabaseUnreachable, mapError } from '../../api/middleware/errors.js';
import { ERRORS_PAGE, errorsPage } from '../../scripts/docs-errors.js';
import { decodeRefusal, encodeRefusal } from '../../domain/commands/pkiJobs.js';
import {
  ANSWERS,
  API_ERROR_CODES,
  conflict,
  DomainError,
  EDGE_ERROR_CODES,
  ERROR_CODES,
  type ErrorCode,
  invalidState,
  isDomainError,
  notAuthorized,
  rateLimited,
  refusal,
} from '../../shared/errors.js';
import { repoRoot } from '../helpers/repo.js';
import { ConnectionRefusedError, DatabaseError, UniqueConstraintError } from 'sequelize';

/** What mapError writes on a context: status, headers, body. */
function answer(err: unknown) {
  const headers: Record<string, string> = {};
  const set = (h: Record<string, string> | string, v?: string) => Object.assign(headers, typeof h === 'string' ? { [h]: v } : h);
  const ctx = { status: 0, body: undefined as unknown, state: { requestId: 'r1' }, set } as unknown as Context;
  mapError(ctx, err);
  return { status: ctx.status, body: ctx.body as { error: string; message: string }, headers };
}

test('every code of the catalogue has one HTTP answer, with the published error values only', (t) => {
  t.deepEqual(Object.keys(ANSWERS).sort(), Object.keys(ERROR_CODES).sort());
  t.deepEqual(
    Object.keys(API_ERROR_CODES).filter((code) => code in EDGE_ERROR_CODES),
    [],
    "a code is the API's or the edge's",
  );
  const api = new Set([
    'invalid_request',
    'unauthorized',
    'not_found',
    'forbidden',
    'not_acceptable',
    'conflict',
    'payload_too_large',
    'unsupported_media_type',
    'quota_exceeded',
    'too_many_requests',
    'internal_error',
    'unavailable',
  ]);
  // not_implemented: a WebSocket to a share whose HTTP/2 target does not accept one (501, as a proxy that cannot carry it)
  // too_many_requests: a share policy's rate limit; unavailable: a share under maintenance
  const edge = new Set([
    'bad_request',
    'unauthorized',
    'forbidden',
    'not_found',
    'bad_gateway',
    'overloaded',
    'gateway_timeout',
    'loop_detected',
    'not_implemented',
    'too_many_requests',
    'unavailable',
  ]);
  for (const [code, { status, error, meaning }] of Object.entries(ERROR_CODES)) {
    t.deepEqual(ANSWERS[code as ErrorCode], ERROR_CODES[code as ErrorCode], 'ANSWERS is the table itself');
    t.true((code in EDGE_ERROR_CODES ? edge : api).has(error), `${code} -> ${error}`);
    t.true(status >= 400 && status < 600, code);
    t.regex(code, /^EH_[A-Z0-9_]+$/);
    t.true(meaning.length > 10 && !meaning.includes('\n'), `${code}: a one-line meaning`);
  }
});

test('docs/errors.md lists the catalogue as it is (npm run docs:errors)', (t) => {
  const page = readFileSync(path.join(repoRoot, ERRORS_PAGE), 'utf8');
  t.is(page, errorsPage(page), 'run `npm run docs:errors` and commit the page');
  const listed = [...page.matchAll(/^\| `(EH_[A-Z0-9_]+)` \| (\d{3}) \| `([a-z_]+)` \|/gm)].map((m) => `${m[1]} ${m[2]} ${m[3]}`);
  t.deepEqual(
    listed.sort(),
    Object.entries(ANSWERS)
      .map(([code, a]) => `${code} ${a.status} ${a.error}`)
      .sort(),
  );
});

/** The server's sources (the agent package's too): where a code is raised. */
const SOURCES = ['api', 'edge', 'shared', 'domain', 'workers', 'scripts', 'agent'];
const TABLE = 'shared/errors.ts';

function* sources(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (name === 'node_modules') continue;
    if (statSync(full).isDirectory()) yield* sources(full);
    else if (/\.(ts|js|mjs)$/.test(name)) yield full;
  }
}

/**
 * The codes the sources raise, by a scan: a code written as a string anywhere but in the table (refusal('EH_X', ..),
 * new HttpError('EH_X', ..), answer(res, 'EH_X', ..), a mapping to it), and the code of each factory of the table
 * (`forbidden()`, `notFound()`, ...) that a file imports from it and calls.
 */
function raisedCodes(): Map<string, string[]> {
  const table = readFileSync(path.join(repoRoot, TABLE), 'utf8');
  const factories = new Map<string, string[]>();
  for (const m of table.matchAll(/^export const (\w+) = ([\s\S]*?)(?=^(?:export|\/\*\*|\/\/)|$(?![\s\S]))/gm)) {
    const codes = [...m[2].matchAll(/new DomainError\('(EH_[A-Z0-9_]+)'/g)].map((c) => c[1]);
    if (codes.length) factories.set(m[1], codes);
  }
  const raised = new Map<string, string[]>();
  const note = (code: string, file: string) => raised.set(code, [...(raised.get(code) ?? []), file]);
  for (const top of SOURCES) {
    for (const full of sources(path.join(repoRoot, top))) {
      const file = path.relative(repoRoot, full);
      if (file === TABLE) continue;
      const text = readFileSync(full, 'utf8');
      for (const m of text.matchAll(/['"`](EH_[A-Z0-9_]+)['"`]/g)) note(m[1], file);
      for (const m of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*'(?:\.\.?\/)+(?:shared\/)?errors\.js'/g)) {
        for (const name of m[1].split(',').map((n) => n.trim())) {
          if (factories.has(name) && new RegExp(`\\b${name}\\(`).test(text.slice(m.index + m[0].length)))
            for (const code of factories.get(name) ?? []) note(code, file);
        }
      }
    }
  }
  return raised;
}

/**
 * Codes in the table that nothing raises yet, each with why it stays. The test fails when one of them is raised (take
 * it off this list then), so the list only shrinks.
 */
const NOT_RAISED_YET: Record<string, string> = {};

test('every code of the table is raised somewhere in the code, and every code raised is in the table', (t) => {
  const raised = raisedCodes();
  t.true(raised.size > 60, `the scan sees the codes raised (${raised.size})`);
  t.true(
    raised.get('EH_NOT_FOUND')?.some((f) => f.startsWith('domain/commands/')),
    'notFound() counts as raising EH_NOT_FOUND',
  );
  t.true(
    raised.get('EH_MTLS_CERT_EXPIRED')?.some((f) => f.startsWith('edge/')),
    'an edge refusal by its code',
  );
  const unknown = [...raised].filter(([code]) => !(code in ERROR_CODES)).map(([code, files]) => `${code} (${files.join(', ')})`);
  t.deepEqual(unknown, [], 'codes raised but not in shared/errors.ts');
  const unraised = Object.keys(ERROR_CODES).filter((code) => !raised.has(code));
  t.deepEqual(
    unraised.sort(),
    Object.keys(NOT_RAISED_YET).sort(),
    'codes of shared/errors.ts raised nowhere: remove them (and their factory), or they are raised now: take them off NOT_RAISED_YET',
  );
});

test('domain errors become their answer; Retry-After where the error says when; a fault is a bare 500', (t) => {
  const state = answer(invalidState('IPsec tunnel', 'NEW', 'delete'));
  t.deepEqual(state.body, { error: 'invalid_request', message: 'IPsec tunnel is NEW; cannot delete from state NEW' });
  t.is(state.headers['Edgehub-Error-Code'], 'EH_INVALID_STATE');
  const expired = answer(refusal('EH_JWT_EXPIRED', 'enrollment JWT has expired'));
  t.deepEqual([expired.status, expired.body.error, expired.headers['Edgehub-Error-Code']], [403, 'not_found', 'EH_JWT_EXPIRED']);
  t.is(answer(notAuthorized()).status, 403);
  t.is(answer(notAuthorized()).body.error, 'not_found');
  const limited = answer(rateLimited('too many failed authentications', 7));
  t.deepEqual([limited.status, limited.body.error, limited.headers['Retry-After']], [429, 'too_many_requests', '7']);
  const negotiation = answer(new HttpError('EH_NOT_ACCEPTABLE', 'send Accept: text/plain'));
  t.deepEqual(negotiation.body, { error: 'not_acceptable', message: 'send Accept: text/plain' });
  t.deepEqual([negotiation.status, negotiation.headers['Edgehub-Error-Code']], [406, 'EH_NOT_ACCEPTABLE']);
  const fault = answer(new TypeError('x is undefined'));
  t.is(fault.status, 500);
  t.is(fault.headers['Edgehub-Error-Code'], 'EH_INTERNAL_ERROR');
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

test("the database unreachable is told from a failed statement and from other libraries' network errors", (t) => {
  const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });
  const wrapped = (e: Error) => new DatabaseError(e as never);
  // unreachable: Sequelize's connection errors, pg's own codes and messages, wrapped or not
  t.true(isDatabaseUnreachable(new ConnectionRefusedError(pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432') as never)));
  t.true(isDatabaseUnreachable(pgError('57P01', 'terminating connection due to administrator command')));
  t.true(isDatabaseUnreachable(wrapped(pgError('57P03', 'the database system is starting up'))));
  t.true(isDatabaseUnreachable(wrapped(pgError('08006', 'connection failure'))));
  t.true(isDatabaseUnreachable(pgError('55000', 'database "x" is not currently accepting connections')));
  t.true(isDatabaseUnreachable(new Error('Connection terminated unexpectedly')));
  t.true(isDatabaseUnreachable(wrapped(pgError('ECONNRESET', 'read ECONNRESET'))));
  // not: a statement that failed, another library's network error, a socket error of unknown origin
  t.false(isDatabaseUnreachable(wrapped(pgError('23505', 'duplicate key value violates unique constraint'))));
  t.false(isDatabaseUnreachable(new UniqueConstraintError({})));
  t.false(isDatabaseUnreachable(pgError('55000', 'object not in prerequisite state')));
  t.false(isDatabaseUnreachable(Object.assign(new TypeError('fetch failed'), { cause: pgError('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.1:443') })));
  t.false(isDatabaseUnreachable(pgError('ECONNRESET', 'read ECONNRESET')));
  t.false(isDatabaseUnreachable(undefined));
  t.false(isDatabaseUnreachable('a string'));
});

test('a statement PostgreSQL gave up on for a reason of the moment is a 503 with Retry-After, not a 500', (t) => {
  const wrapped = (code: string, message: string) => new DatabaseError(Object.assign(new Error(message), { code }) as never);
  const cases: [string, string, string][] = [
    ['57014', 'canceling statement due to statement timeout', '1'],
    ['40P01', 'deadlock detected', '1'],
    ['40001', 'could not serialize access due to concurrent update', '1'],
    ['53100', 'could not extend file: No space left on device', '5'],
    ['53200', 'out of memory', '5'],
    ['53300', 'sorry, too many clients already', '5'],
  ];
  for (const [code, message, retryAfter] of cases) {
    const a = answer(wrapped(code, message));
    t.deepEqual([a.status, a.body.error, a.headers['Retry-After'], a.headers['Edgehub-Error-Code']], [503, 'unavailable', retryAfter, 'EH_UNAVAILABLE'], code);
    t.false(a.body.message.includes(message), `${code}: the server's own words stay in the log`);
  }
  // a statement that failed for what it asked is still not one of them
  t.is(answer(wrapped('42P01', 'relation "x" does not exist')).status, 500);
});
