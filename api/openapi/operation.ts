/** One operation of the API as ./operations lists it, the input of ./document.ts. */
import type { z, ZodType } from 'zod';

export type Scope = 'open' | 'admin' | 'account' | 'hub';
type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** A success answer: a JSON schema, `null` for no body, or a non-JSON media type with a description. */
export type Success = ZodType | null | { mediaType: string; description: string; example?: string };

export interface Operation {
  method: Method;
  /** As registered (router syntax: `:param`, `\\:` for a literal colon); an array for alternative forms. */
  path: string | string[];
  scope: Scope;
  tag: string;
  summary: string;
  description?: string;
  body?: ZodType;
  /** Query parameters (an object schema). `paged` adds page, size and sort. */
  query?: z.ZodObject;
  paged?: boolean;
  responses: Partial<Record<number, Success>>;
  /** Extra error statuses this operation answers besides the common ones. */
  errors?: number[];
  /** Response headers by status. */
  headers?: Partial<Record<number, Record<string, string>>>;
}
