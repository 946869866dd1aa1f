import type { Context } from 'koa';
import getRawBody from 'raw-body';
import { answerOcsp, OCSP_MAX_REQUEST_BYTES } from '../../domain/commands/ocspResponder.js';
import { caCertificate, currentCrl } from '../../domain/commands/pkiPublication.js';
import { badRequest } from '../../shared/errors.js';
import { derToPem } from '../../shared/pki/der.js';
import type { Routes } from '../router.js';

/**
 * What relying parties outside the service read to check a hub's certificates, without authentication (rate limited
 * like the other unauthenticated routes): the CA's CRL, its certificate (the caIssuers URL) and its OCSP responder.
 * `root` in place of a hub id is the root CA (its CRL lists issuing CAs). Nothing here tells more than a CRL publishes.
 */

/** `?format=pem` or DER (the default); anything else is a 400. */
function wantsPem(ctx: Context): boolean {
  const format = ctx.query.format;
  if (format === undefined || format === 'der') return false;
  if (format === 'pem') return true;
  throw badRequest("value for query parameter 'format' must be der or pem");
}

/**
 * The request of a GET: the path's last segment, base64url or URL-encoded base64 (`/` as `%2F`, as RFC 6960 A.1
 * asks), read from the raw path.
 */
function getRequest(ctx: Context): Buffer {
  const at = ctx.path.toLowerCase().lastIndexOf('/ocsp/');
  let text: string;
  try {
    text = decodeURIComponent(ctx.path.slice(at + '/ocsp/'.length));
  } catch {
    return Buffer.alloc(0);
  }
  if (text.length > (OCSP_MAX_REQUEST_BYTES * 4) / 3 + 4 || !/^[A-Za-z0-9+/_-]*={0,2}$/.test(text)) return Buffer.alloc(0);
  return Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
}

async function postRequest(ctx: Context): Promise<Buffer> {
  if (ctx.request.length !== undefined && ctx.request.length > OCSP_MAX_REQUEST_BYTES) return Buffer.alloc(0);
  try {
    return await getRawBody(ctx.req, { limit: OCSP_MAX_REQUEST_BYTES, length: ctx.request.length });
  } catch {
    // too large, cut short, or not a body: answered as a malformed request; the connection closes after the answer
    ctx.set('Connection', 'close');
    return Buffer.alloc(0);
  }
}

/**
 * Whether If-None-Match names this ETag (weak comparison, `*` included). Read here rather than through Koa's
 * `ctx.fresh`, which treats a request's `Cache-Control: no-cache` (what fetch sends with a conditional request) as
 * stale: If-None-Match is answered whatever the request's cache directives.
 */
function matchesEtag(header: string, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t.replace(/^W\//, '') === etag;
  });
}

function ocspAnswer(ctx: Context, der: Buffer) {
  ctx.status = 200;
  ctx.type = 'application/ocsp-response';
  ctx.set('Cache-Control', 'no-cache');
  ctx.body = der;
}

export default function routes({ open }: Routes) {
  open.get('/pki/:hubId/crl', async (ctx) => {
    const pem = wantsPem(ctx);
    const crl = await currentCrl(ctx.params.hubId);
    const etag = `"crl-${crl.crlNumber}-${pem ? 'pem' : 'der'}"`;
    ctx.set('ETag', etag);
    ctx.set('Last-Modified', crl.thisUpdate.toUTCString());
    ctx.set('Expires', crl.nextUpdate.toUTCString());
    ctx.set('Cache-Control', `public, max-age=${Math.max(0, Math.floor((crl.nextUpdate.getTime() - Date.now()) / 1000))}`);
    if (matchesEtag(ctx.get('if-none-match'), etag)) {
      ctx.status = 304;
      return;
    }
    ctx.type = pem ? 'application/x-pem-file' : 'application/pkix-crl';
    ctx.body = pem ? derToPem(crl.der, 'X509 CRL') : crl.der;
  });
  open.get('/pki/:hubId/ca', async (ctx) => {
    const pem = wantsPem(ctx);
    const der = await caCertificate(ctx.params.hubId);
    ctx.type = pem ? 'application/x-pem-file' : 'application/pkix-cert';
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = pem ? derToPem(der, 'CERTIFICATE') : der;
  });
  open.post('/pki/:hubId/ocsp', async (ctx) => {
    ocspAnswer(ctx, await answerOcsp(ctx.params.hubId, await postRequest(ctx)));
  });
  open.get('/pki/:hubId/ocsp/:request', async (ctx) => {
    ocspAnswer(ctx, await answerOcsp(ctx.params.hubId, getRequest(ctx)));
  });
}
