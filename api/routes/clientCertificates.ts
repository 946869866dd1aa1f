import { z } from 'zod';
import { createCertificate, deleteCertificate, findCertificate, listCertificates, updateCertificate } from '../../domain/commands/clientCertificates.js';
import { reasonCode } from '../../domain/commands/revocations.js';
import { principalName } from '../middleware/auth.js';
import { mapPage, pageRequest } from '../paging.js';
import { presentCertificate, presentCertificateSummary, presentDeleted } from '../presenters/pki.js';
import type { Routes } from '../router.js';
import { currentHub } from '../scope.js';
import { body, fields } from '../validate.js';

const pem = z.string().min(1, 'must not be empty');
const validYears = z.number().int().min(1).max(10).optional();
export const createSchema = z.object({ name: fields.name, value: pem, validYears });
export const patchSchema = z.object({ name: fields.name.optional(), value: pem.optional(), validYears });

export default function routes({ hub }: Routes) {
  hub.get('/client-certificates', async (ctx) => {
    ctx.body = mapPage(await listCertificates(currentHub(ctx).id, pageRequest(ctx, ['createdAt', 'name'])), presentCertificateSummary);
  });
  hub.post('/client-certificates', async (ctx) => {
    const input = body(ctx, createSchema);
    const cert = await createCertificate(currentHub(ctx).id, input, principalName(ctx));
    ctx.status = 201;
    ctx.body = presentCertificateSummary(cert);
  });
  hub.get('/client-certificates/:id', async (ctx) => {
    ctx.body = presentCertificate(await findCertificate(currentHub(ctx).id, ctx.params.id));
  });
  hub.patch('/client-certificates/:id', async (ctx) => {
    ctx.body = presentCertificate(await updateCertificate(currentHub(ctx).id, ctx.params.id, body(ctx, patchSchema), principalName(ctx)));
  });
  hub.put('/client-certificates/:id', async (ctx) => {
    ctx.body = presentCertificate(await updateCertificate(currentHub(ctx).id, ctx.params.id, body(ctx, createSchema), principalName(ctx)));
  });
  // a certificate the hub's CA issued is revoked with `reason` (RFC 5280 name, default unspecified); a bad one is a 400
  hub.delete('/client-certificates/:id', async (ctx) => {
    const reason = reasonCode(ctx.query.reason);
    ctx.body = presentDeleted(await deleteCertificate(currentHub(ctx).id, ctx.params.id, reason, principalName(ctx)), principalName(ctx));
  });
}
