/**
 * Builds the OpenAPI 3.1 document from ./operations.ts (./operations/, a file per resource) with zod-openapi (zod 4 JSON Schema underneath): request
 * bodies from the route files' own schemas (input side), responses from ./components.ts (output side).
 */
import { z } from 'zod';
import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject, type ZodOpenApiResponseObject } from 'zod-openapi';
import { ANSWERS, API_ERROR_CODES, ERROR_CODE_HEADER, type ErrorCode } from '../../shared/errors.js';
import { HUB_PREFIXES } from '../router.js';
import { ErrorBody } from './components.js';
import type { Operation, Scope, Success } from './operation.js';
import { operations } from './operations.js';

/** Router path syntax -> OpenAPI: `:id` -> `{id}`, an escaped colon `\:` -> a literal `:`. */
export function openApiPath(routerPath: string): string {
  return routerPath
    .replace(/\\:/g, '\u0000')
    .replace(/:([A-Za-z0-9_]+)/g, '{$1}')
    .replace(/\u0000/g, ':');
}

const SECURITY: Record<Scope, Record<string, string[]>[]> = {
  open: [],
  admin: [{ adminToken: [] }],
  account: [{ apiKeyBearer: [] }, { apiKeyBasic: [] }],
  hub: [{ apiKeyBearer: [] }, { apiKeyBasic: [] }],
};

const ERROR_TEXT: Record<number, string> = {
  400: 'bad input (names the property and what it must be), or a state transition that is not allowed',
  401: 'missing or invalid credentials',
  403: 'the credentials do not grant this (another hub, a feature not enabled), or a change of state came from another origin (Origin, Sec-Fetch-Site)',
  404: 'no such resource in an accessible hub',
  406: 'the requested media type cannot be produced',
  409: 'a name or value collides with an existing one',
  413: 'body over 1 MiB',
  415: 'the body is not JSON, or a change with Basic credentials was sent without Content-Type: application/json',
  429: 'too many requests (see Retry-After)',
  500: 'unexpected error (no detail; the message carries the request id)',
  503: 'a dependency is unavailable, or no database connection was free in time (see Retry-After)',
};

/** The header every error answer carries: the codes of the catalogue the API answers with at `status`. */
function errorCodeHeader(status: number) {
  const codes = (Object.keys(API_ERROR_CODES) as ErrorCode[]).filter((code) => ANSWERS[code].status === status);
  return {
    [ERROR_CODE_HEADER]: {
      description: 'the stable code of the refusal (docs/errors.md): tells apart what shares one `error` value',
      required: true,
      schema: { type: 'string' as const, ...(codes.length ? { enum: codes } : {}) },
    },
  };
}

/** The error statuses an operation can answer besides its own `errors` (503: any operation may find the pool busy). */
function errorStatuses(op: Operation): number[] {
  const statuses = [400, 404, 413, 429, 500, 503];
  if (op.scope !== 'open') statuses.push(401, 403);
  // a change of state from another origin is 403 on every route, the unauthenticated ones included
  if (op.method !== 'get') statuses.push(403, 409, 415);
  return [...new Set([...statuses, ...(op.errors ?? [])])].sort((a, b) => a - b);
}

function success(status: number, answer: Success, op: Operation): ZodOpenApiResponseObject {
  const headers = op.headers?.[status]
    ? Object.fromEntries(Object.entries(op.headers[status]!).map(([name, description]) => [name, { description, schema: { type: 'string' as const } }]))
    : undefined;
  if (answer === null) return { description: 'done; no body', headers };
  if (answer instanceof z.ZodType)
    return {
      description: status === 202 ? 'accepted: the resource at its new state; the work goes on in an execution' : 'success',
      headers,
      content: { 'application/json': { schema: answer } },
    };
  return {
    description: answer.description,
    headers,
    content: { [answer.mediaType]: { schema: { type: 'string' }, ...(answer.example ? { example: answer.example } : {}) } },
  };
}

const pagedQuery = z.object({
  page: z.string().regex(/^\d+$/).optional().meta({ description: 'zero-based page number (default 0)' }),
  size: z.string().regex(/^\d+$/).optional().meta({ description: 'page size, 1 to 1000 (default 20)' }),
  sort: z.string().optional().meta({ description: "'field' or 'field,asc|desc' (repeatable)" }),
});

function operationObject(op: Operation, paths: string[]): ZodOpenApiOperationObject {
  const pathParams = [...new Set(paths.flatMap((p) => [...p.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map((m) => m[1])))];
  const query = op.paged ? (op.query ? pagedQuery.extend(op.query.shape) : pagedQuery) : op.query;
  const responses: Record<`${number}`, ZodOpenApiResponseObject> = {};
  for (const [status, answer] of Object.entries(op.responses)) responses[status as `${number}`] = success(Number(status), answer as Success, op);
  for (const status of errorStatuses(op)) {
    if (`${status}` in op.responses) continue; // an answer of the operation's own (the liveness probe's 503)
    responses[`${status}`] = {
      description: ERROR_TEXT[status] ?? 'error',
      headers: errorCodeHeader(status),
      content: { 'application/json': { schema: ErrorBody } },
    };
  }
  return {
    tags: [op.tag],
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    security: SECURITY[op.scope],
    requestParams: {
      ...(pathParams.length ? { path: z.object(Object.fromEntries(pathParams.map((p) => [p, z.string()]))) } : {}),
      ...(query ? { query } : {}),
    },
    ...(op.body ? { requestBody: { required: true, content: { 'application/json': { schema: op.body } } } } : {}),
    responses,
  };
}

/** Every concrete path an operation answers under (both hub prefixes, every alternative form). */
function concretePaths(op: Operation): string[] {
  const forms = Array.isArray(op.path) ? op.path : [op.path];
  const prefixes = op.scope === 'hub' ? HUB_PREFIXES : [''];
  return prefixes.flatMap((prefix) => forms.map((form) => openApiPath(prefix + form)));
}

function buildDocument(): ReturnType<typeof createDocument> {
  const paths: ZodOpenApiPathsObject = {};
  for (const op of operations) {
    for (const path of concretePaths(op)) {
      const item = (paths[path] ??= {});
      if (item[op.method]) throw new Error(`OpenAPI: ${op.method.toUpperCase()} ${path} is listed twice in api/openapi/operations/`);
      const operationId = `${op.method}${path.replace(/:/g, '_').replace(/[^A-Za-z0-9_]+(.)?/g, (_, ch: string | undefined) => (ch ? ch.toUpperCase() : ''))}`;
      item[op.method] = { ...operationObject(op, [path]), operationId };
    }
  }
  return createDocument({
    openapi: '3.1.0',
    info: {
      title: 'edgehub API',
      version: '0.1.0',
      description:
        'Edge ingress management: shares, frontends, client certificates, IPsec, health checks, metrics. ' +
        'Every hub-scoped path answers under both `/hub/{hubId}` and `/hub/v2/{hubId}`. Errors are `{error, message}`, with ' +
        'a stable code in the `Edgehub-Error-Code` header (docs/errors.md).',
    },
    servers: [{ url: '/', description: 'this server' }],
    tags: [...new Set(operations.map((o) => o.tag))].map((name) => ({ name })),
    components: {
      securitySchemes: {
        apiKeyBearer: { type: 'http', scheme: 'bearer', description: "An API key's token: `Authorization: Bearer <token>`; grants its own hub only." },
        apiKeyBasic: { type: 'http', scheme: 'basic', description: 'An API key as `Authorization: Basic base64(<username>:<token>)`.' },
        adminToken: { type: 'http', scheme: 'bearer', description: 'The operator token (HUB_ADMIN_TOKEN): `Authorization: Bearer <admin token>`.' },
      },
    },
    paths,
  });
}

let cached: ReturnType<typeof createDocument> | undefined;

/** The document, built once per process. */
export function openApiDocument(): ReturnType<typeof createDocument> {
  cached ??= buildDocument();
  return cached;
}
