import test, { type ExecutionContext } from 'ava';
import { type HubFixture, type Response, useStack } from '../../helpers/stack.js';
import type { ErrorCode } from '../../../shared/errors.js';
import { assertRefused } from '../../helpers/refusals.js';

const stack = useStack(test, { workers: false });
let hub: HubFixture;
test.before(async () => {
  hub = await stack.hub();
});

const isError = (t: ExecutionContext, r: Response, status: number, error: string, code: ErrorCode, names?: string | string[]) => {
  assertRefused(t, r, status, error, code, names);
  t.false(/at .*\(.*:\d+:\d+\)/.test(r.text), 'no stack trace');
};

test('malformed JSON is 400 invalid_request', async (t) => {
  const r = await hub.call('POST', `${hub.h}/environments`, { raw: '{"description":', headers: { 'content-type': 'application/json' } });
  isError(t, r, 400, 'invalid_request', 'EH_MALFORMED_JSON');
});

test('a wrong type names the property and the expected type', async (t) => {
  const r = await hub.call('POST', `${hub.h}/environments`, { body: { description: 42 } });
  isError(t, r, 400, 'invalid_request', 'EH_INVALID_REQUEST');
  t.is(r.json.message, "value for property '$.description' must be of type string (received number)");
});

test('arrays, null and scalars as a body never reach a handler', async (t) => {
  for (const raw of ['[]', 'null', '"text"', '12']) {
    const r = await hub.call('POST', `${hub.h}/environments`, { raw, headers: { 'content-type': 'application/json' } });
    isError(t, r, 400, 'invalid_request', 'EH_INVALID_REQUEST', "'$' must be of type object");
  }
  const admin = await stack.call('POST', '/admin/v1/hubs', { auth: stack.admin, body: { name: null } });
  isError(t, admin, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.name');
});

test('a missing required property is named', async (t) => {
  const r = await stack.call('POST', '/admin/v1/hubs', { auth: stack.admin, body: {} });
  isError(t, r, 400, 'invalid_request', 'EH_INVALID_REQUEST', "property '$.name' is required");
});

test('a non-JSON body is 415', async (t) => {
  const r = await hub.call('POST', `${hub.h}/environments`, { raw: 'description=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  isError(t, r, 415, 'unsupported_media_type', 'EH_UNSUPPORTED_MEDIA_TYPE');
});

test('a body over 1 MiB is 413', async (t) => {
  const big = JSON.stringify({ description: 'x'.repeat(1024 * 1024 + 10) });
  const r = await hub.call('POST', `${hub.h}/environments`, { raw: big, headers: { 'content-type': 'application/json' } });
  isError(t, r, 413, 'payload_too_large', 'EH_PAYLOAD_TOO_LARGE');
  const list = await hub.call('GET', `${hub.h}/environments`);
  t.is(list.json.totalElements, 0, 'nothing was written');
});

test('an unknown route is 404 with a body', async (t) => {
  isError(t, await hub.call('GET', `${hub.h}/no-such-resource`), 404, 'not_found', 'EH_ROUTE_NOT_FOUND');
  isError(t, await stack.call('GET', '/nope'), 404, 'not_found', 'EH_ROUTE_NOT_FOUND');
});

test('an unknown id in an accessible hub is 404 not_found', async (t) => {
  const r = await hub.call('GET', `${hub.h}/executions/00000000-0000-0000-0000-000000000000`);
  isError(t, r, 404, 'not_found', 'EH_NOT_FOUND');
  const env = await hub.call('GET', `${hub.h}/environments/nosuchenv`);
  isError(t, env, 404, 'not_found', 'EH_NOT_FOUND');
});

test('a colliding name is 409 conflict', async (t) => {
  const body = { publicName: 'edge-eu', urlTemplate: 'https://{token}.eu.example.com' };
  const first = await stack.call('POST', '/admin/v1/frontends', { auth: stack.admin, body });
  t.is(first.status, 201);
  const second = await stack.call('POST', '/admin/v1/frontends', { auth: stack.admin, body });
  isError(t, second, 409, 'conflict', 'EH_CONFLICT');
});

test('operator input is validated: urlTemplate needs {token}; unknown hub is 404', async (t) => {
  const r = await stack.call('POST', '/admin/v1/frontends', { auth: stack.admin, body: { publicName: 'x', urlTemplate: 'https://x.example.com' } });
  isError(t, r, 400, 'invalid_request', 'EH_INVALID_REQUEST', ['$.urlTemplate', '{token}']);
  isError(t, await stack.call('GET', '/admin/v1/hubs/nope', { auth: stack.admin }), 404, 'not_found', 'EH_NOT_FOUND');
  isError(t, await stack.call('POST', '/admin/v1/hubs/nope/api-keys', { auth: stack.admin, body: { name: 'k' } }), 404, 'not_found', 'EH_NOT_FOUND');
  const features = await stack.call('PATCH', `/admin/v1/hubs/${hub.hubId}`, { auth: stack.admin, body: { features: { ipsec: 'yes' } } });
  isError(t, features, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.features.ipsec');
});

test('PATCH hub features; standard frontends are listed for every hub in both path forms', async (t) => {
  const r = await stack.call('PATCH', `/admin/v1/hubs/${hub.hubId}`, { auth: stack.admin, body: { features: { ipsec: true } } });
  t.is(r.status, 200);
  t.true(r.json.features.ipsec);
  const fe = await hub.call('GET', `${hub.h}/frontends`);
  t.is(fe.status, 200);
  t.true(fe.json.some((f: any) => f.publicName === 'public' && f.urlTemplate.includes('{token}') && typeof f.id === 'string'));
  const account = await hub.call('GET', '/account/frontends');
  t.deepEqual(account.json, fe.json);
  const adminAccount = await stack.call('GET', '/account/frontends', { auth: stack.admin });
  t.is(adminAccount.status, 403);
});

test('every response carries a request id; a sane incoming one is kept', async (t) => {
  const r = await hub.call('GET', `${hub.h}/environments`, { headers: { 'x-request-id': 'trace-123' } });
  t.is(r.headers.get('x-request-id'), 'trace-123');
  const other = await hub.call('GET', `${hub.h}/environments`, { headers: { 'x-request-id': 'bad id with spaces' } });
  t.not(other.headers.get('x-request-id'), 'bad id with spaces');
});
