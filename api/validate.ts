import type { Context } from 'koa';
import { z, type ZodError, type ZodType } from 'zod';
import { badRequest } from '../shared/errors.js';

export function jsonPath(path: PropertyKey[]): string {
  return '$' + path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
}

const received = (input: unknown) => (input === null ? 'null' : Array.isArray(input) ? 'array' : typeof input);

/** One readable sentence per problem, naming the property (as a JSON path) and what it must be. */
export function formatZodError(err: ZodError): string {
  return err.issues
    .slice(0, 5)
    .map((issue) => {
      const where = jsonPath(issue.path);
      if (issue.code === 'invalid_type') {
        const input = (issue as { input?: unknown }).input;
        if (input === undefined && issue.path.length) return `property '${where}' is required and must be of type ${issue.expected}`;
        return `value for property '${where}' must be of type ${issue.expected} (received ${received(input)})`;
      }
      if (issue.code === 'unrecognized_keys')
        return `unknown propert${issue.keys.length > 1 ? 'ies' : 'y'} ${issue.keys.map((k) => `'${jsonPath([...issue.path, k])}'`).join(', ')}`;
      return `value for property '${where}' is invalid: ${issue.message}`;
    })
    .join('; ');
}

function parse<S extends ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input, { reportInput: true });
  if (!result.success) throw badRequest(formatZodError(result.error));
  return result.data;
}

const strictOnes = new WeakMap<ZodType, ZodType>();

/**
 * The schema with unknown top-level properties refused (a typo such as `{"mtls": true}` must not pass unnoticed as
 * a public share): an object schema made strict, once; other schemas as they are (their objects are strict where
 * they are written).
 */
function strict<S extends ZodType>(schema: S): S {
  let made = strictOnes.get(schema);
  if (!made) {
    made = schema instanceof z.ZodObject ? (schema as unknown as z.ZodObject).strict() : schema;
    strictOnes.set(schema, made);
  }
  return made as S;
}

/**
 * The JSON body, validated; unknown properties are a 400 naming each of them. A missing body is validated as `{}`
 * so that required properties are named.
 */
export function body<S extends ZodType>(ctx: Context, schema: S): z.output<S> {
  const raw = (ctx.request as { body?: unknown }).body;
  return parse(strict(schema), raw === undefined ? {} : raw);
}

/** The query string, validated. Repeated parameters arrive as arrays. */
export function query<S extends ZodType>(ctx: Context, schema: S): z.output<S> {
  return parse(schema, ctx.query);
}

/** The first value of a query parameter that may be repeated. */
export const single = (v: unknown) => (Array.isArray(v) ? v[0] : v);

/** Zod helpers shared by route schemas. */
export const fields = {
  name: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
  /** Query integers arrive as strings. */
  queryInt: (min: number, max: number) =>
    z.preprocess(single, z.string().regex(/^\d+$/, 'must be a non-negative integer').transform(Number).pipe(z.number().int().min(min).max(max))),
};
