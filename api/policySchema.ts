/**
 * The `policy` property of a share's create and update: validated whole, every problem named by its JSON path
 * (`$.policy.ipAllow[2]`). Rules that depend on the share (a TCP share takes IP rules only; basic auth does not go
 * with an auth provider) are the command's (domain/commands/shares.ts).
 */
import ipaddr from 'ipaddr.js';
import { z } from 'zod';
import { durationMs } from '../shared/durations.js';
import { ERROR_PAGE_MAX_BYTES, isProtectedHeader } from '../shared/sharePolicy.js';

/** Entries of one IP list at most. */
const MAX_CIDRS = 5000;

const cidr = z.string().refine((s) => {
  try {
    ipaddr.parseCIDR(s);
    return true;
  } catch {
    return false;
  }
}, 'must be a CIDR such as 203.0.113.0/24 or 2001:db8::/32');

const cidrList = (allow: boolean) =>
  z
    .array(cidr)
    .min(allow ? 1 : 0, 'must name at least one CIDR (leave the property out for no allow list)')
    .max(MAX_CIDRS, `must name at most ${MAX_CIDRS} CIDRs`);

/** RFC 9110 5.1 token. */
const TOKEN = /^[!#$%&'*+\-.^`|~0-9A-Za-z]+$/;
/** RFC 9110 5.5 field value, without leading or trailing whitespace, no control characters. */
const FIELD_VALUE = /^(?:[\x21-\x7e\x80-\xff](?:[\t\x20-\x7e\x80-\xff]*[\x21-\x7e\x80-\xff])?)?$/;

const headerName = z
  .string()
  .max(256, 'must be at most 256 characters')
  .regex(TOKEN, "must be an HTTP header name (letters, digits and !#$%&'*+-.^`|~; no underscore)")
  .refine((n) => !isProtectedHeader(n), "is one of the edge's own headers (forwarding, identity, framing), which a policy can neither set nor remove");

const headerRules = z
  .object({
    set: z
      .record(
        headerName,
        z
          .string()
          .max(8192, 'must be at most 8192 characters')
          .regex(FIELD_VALUE, 'must be an HTTP header value (no control characters, no leading or trailing space)'),
      )
      .refine((o) => Object.keys(o).length <= 50, 'must set at most 50 headers')
      .optional(),
    remove: z.array(headerName).max(50, 'must remove at most 50 headers').optional(),
  })
  .strict();

const page = z.string().refine((s) => Buffer.byteLength(s) <= ERROR_PAGE_MAX_BYTES, `must be at most ${ERROR_PAGE_MAX_BYTES} bytes`);

export const policySchema = z
  .object({
    ipAllow: cidrList(true).optional(),
    ipDeny: cidrList(false).optional(),
    rateLimit: z
      .object({
        requests: z.number().int('must be an integer').min(1, 'must be at least 1').max(1_000_000, 'must be at most 1000000'),
        per: z.string().refine((v) => {
          const ms = durationMs(v);
          return ms !== undefined && ms >= 1000 && ms <= 86_400_000;
        }, 'must be an ISO 8601 duration from PT1S to P1D, such as PT1M'),
        by: z.enum(['client-ip', 'identity'], "must be 'client-ip' (the default) or 'identity'").default('client-ip'),
      })
      .strict()
      .optional(),
    basicAuth: z
      .array(
        z
          .object({
            user: z
              .string()
              .min(1, 'must not be empty')
              .max(64, 'must be at most 64 characters')
              .regex(/^[\x21-\x39\x3b-\x7e]+$/, 'must be printable ASCII without a colon or space'),
            password: z.string().min(8, 'must be at least 8 characters').max(256, 'must be at most 256 characters').optional(),
          })
          .strict(),
      )
      .min(1, 'must name at least one user (leave the property out for no basic auth)')
      .max(100, 'must name at most 100 users')
      .superRefine((users, ctx) => {
        const seen = new Set<string>();
        users.forEach((u, i) => {
          if (seen.has(u.user)) ctx.addIssue({ code: 'custom', path: [i, 'user'], message: `names the user '${u.user}' twice` });
          seen.add(u.user);
        });
      })
      .optional(),
    requestHeaders: headerRules.optional(),
    responseHeaders: headerRules.optional(),
    errorPages: z.object({ '502': page.optional(), '503': page.optional(), '504': page.optional() }).strict().optional(),
    maintenance: z.boolean().optional(),
  })
  .strict();
