/** The kinds of value a setting takes (ports, durations, flags, address lists) and the entry each setting is. */
import { z } from 'zod';
import { durationMs } from '../durations.js';

export type Group =
  | 'service'
  | 'processes'
  | 'edge'
  | 'custom frontends'
  | 'IPsec'
  | 'jobs and schedules'
  | 'security and limits'
  | 'telemetry and logs'
  | 'edge login';

export interface Entry<T extends z.ZodType> {
  schema: T;
  group: Group;
  description: string;
  /** The default as the documentation shows it, where the schema's own (or its absence) would mislead. */
  shown?: string;
}

export const entry = <T extends z.ZodType>(schema: T, group: Group, description: string, shown?: string): Entry<T> => ({ schema, group, description, shown });

export const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));
/** A whole number within bounds; unset or blank means the default. */
export const int = (min: number, max: number, fallback: number) =>
  z.preprocess((v) => (typeof v === 'string' && v.trim() === '' ? undefined : v), z.coerce.number().int().min(min).max(max).default(fallback));
export const optionalInt = (min: number, max: number) =>
  optionalString.pipe(z.string().regex(/^\d+$/, 'must be a whole number').transform(Number).pipe(z.number().int().min(min).max(max)).optional());
export const port = (fallback: number) => int(0, 65535, fallback);
export const httpUrl = z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' });
/** An ISO 8601 duration (P2D, PT12H, P1W), kept as written; checked at start so a typo does not wait for its job. */
export const duration = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .refine((v) => (durationMs(v) ?? 0) > 0, 'must be an ISO 8601 duration such as P2D or PT12H');
export const flag = z
  .enum(['1', 'true', '0', 'false', ''])
  .optional()
  .transform((v) => v === '1' || v === 'true');
export const HOST_PORT_LIST = /^(\[[0-9a-fA-F:.]+\]|[^,\s:[\]]+):\d{1,5}(,(\[[0-9a-fA-F:.]+\]|[^,\s:[\]]+):\d{1,5})*$/;
export const IP_PORT_LIST = /^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]):\d{1,5}(,(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]):\d{1,5})*$/;
