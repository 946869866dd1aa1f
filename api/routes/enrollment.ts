import { z } from 'zod';
import { checkEnrollment, enrollWithJwt, redeemTokenInPath } from '../../domain/commands/enrollment.js';
import { presentCertificate } from '../presenters/pki.js';
import type { Routes } from '../router.js';
import { body, fields } from '../validate.js';

export const enrollSchema = z.object({ jwt: z.string().min(1, 'must not be empty'), csr: z.string().min(1, 'must not be empty') });
export const tokenSchema = z.object({
  type: z.enum(['CSR', 'CERTIFICATE']),
  value: z.string().min(1, 'must not be empty'),
  name: fields.name.optional(),
});

/** Unauthenticated: the JWT in the body (or the token in the path) is the credential. Both path prefixes answer. */
export default function routes({ open }: Routes) {
  const prefixes = ['/hub/v2/:hubId', '/hub/:hubId'];
  open.post(
    prefixes.map((p) => `${p}/client-certificates/enroll`),
    async (ctx) => {
      const input = body(ctx, enrollSchema);
      const hubId = ctx.params.hubId;
      if (ctx.get('x-validate').toLowerCase() === 'true') {
        ctx.body = (await checkEnrollment(hubId, input)).violations;
        return;
      }
      const { certificate, replayed } = await enrollWithJwt(hubId, input);
      // a retry that finds its certificate already issued (the first request stopped waiting) is 200, not 201
      ctx.status = replayed ? 200 : 201;
      ctx.body = presentCertificate(certificate);
    },
  );
  open.post(
    prefixes.map((p) => `${p}/client-certificates/token/:token`),
    async (ctx) => {
      const input = body(ctx, tokenSchema);
      ctx.status = 201;
      ctx.body = presentCertificate(await redeemTokenInPath(ctx.params.hubId, ctx.params.token, input));
    },
  );
}
