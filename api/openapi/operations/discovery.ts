/** The service's own operations and discovery: health, version, the open PKI endpoints (CA certificates, CRL, OCSP). */
import { z } from 'zod';
import * as c from '../components.js';
import type { Operation } from '../operation.js';

const pkiFormat = z.object({ format: z.enum(['der', 'pem']).optional().meta({ description: 'der (default) or pem' }) });

export const discoveryOperations: Operation[] = [
  {
    method: 'get',
    path: '/healthz',
    scope: 'open',
    tag: 'Operations',
    summary: 'Liveness: PostgreSQL and Redis answer',
    responses: { 200: c.Health, 503: c.Health },
  },
  {
    method: 'get',
    path: '/openapi.json',
    scope: 'open',
    tag: 'Operations',
    summary: 'This document',
    responses: { 200: z.record(z.string(), z.unknown()).meta({ description: 'OpenAPI 3.1 document' }) },
  },
  {
    method: 'get',
    path: '/',
    scope: 'open',
    tag: 'Operations',
    summary: 'Where things are (a browser is sent to /console)',
    responses: { 200: z.object({ name: z.string(), console: z.string(), docs: z.string(), openapi: z.string(), health: z.string() }) },
  },
  {
    method: 'get',
    path: '/console',
    scope: 'open',
    tag: 'Operations',
    summary: 'The web console (HTML)',
    responses: { 200: { mediaType: 'text/html', description: 'the console page' } },
  },
  {
    method: 'get',
    path: '/console/:file',
    scope: 'open',
    tag: 'Operations',
    summary: 'Files of the web console',
    responses: { 200: { mediaType: 'application/octet-stream', description: 'a script or stylesheet' } },
  },
  {
    method: 'get',
    path: '/docs',
    scope: 'open',
    tag: 'Operations',
    summary: 'API reference page (HTML)',
    responses: { 200: { mediaType: 'text/html', description: 'the docs page' } },
  },
  {
    method: 'get',
    path: '/docs/:file',
    scope: 'open',
    tag: 'Operations',
    summary: 'Assets of the docs page',
    responses: { 200: { mediaType: 'application/octet-stream', description: 'a script, stylesheet or image' } },
  },
  {
    method: 'get',
    path: '/metrics',
    scope: 'admin',
    tag: 'Operations',
    summary: 'Prometheus metrics of this web process',
    responses: {
      200: {
        mediaType: 'text/plain',
        description: 'Prometheus text exposition format 0.0.4',
        example: 'edgehub_http_requests_total{route="/healthz",method="GET",status="200",process="web"} 3',
      },
    },
  },
  {
    method: 'get',
    path: '/hub/v2/public/.well-known/jwks.json',
    scope: 'open',
    tag: 'PKI',
    summary: 'Enrollment JWT signing keys (JWKS)',
    responses: { 200: c.Jwks },
  },
  {
    method: 'get',
    path: '/pki/:hubId/crl',
    scope: 'open',
    tag: 'PKI',
    summary: "The hub's issuing CA's CRL (`root` for the root CA's CRL of issuing CAs)",
    description:
      'DER (`application/pkix-crl`), or PEM with `?format=pem`. Signed anew within seconds of a revocation and at least every `HUB_CRL_REFRESH`; ' +
      '`ETag` names its cRLNumber, `Cache-Control` lasts until its nextUpdate. 404 when the hub has no CA.',
    query: pkiFormat,
    responses: { 200: { mediaType: 'application/pkix-crl', description: 'the CRL (DER; PEM with format=pem)' }, 304: null },
    headers: { 200: { ETag: 'the CRL number and format', 'Cache-Control': 'public, max-age until nextUpdate' } },
  },
  {
    method: 'get',
    path: '/pki/:hubId/ca',
    scope: 'open',
    tag: 'PKI',
    summary: "The hub's issuing CA certificate (`root` for the root CA): the caIssuers URL of its certificates",
    query: pkiFormat,
    responses: { 200: { mediaType: 'application/pkix-cert', description: 'the certificate (DER; PEM with format=pem)' } },
  },
  {
    method: 'post',
    path: '/pki/:hubId/ocsp',
    scope: 'open',
    tag: 'PKI',
    summary: "OCSP (RFC 6960) for the hub's issuing CA: the body is a DER OCSPRequest (`application/ocsp-request`)",
    description:
      "Answers good, revoked (time and reason) or unknown per certificate, signed by the CA's delegated responder; echoes a nonce. " +
      'Garbage, truncated or oversized requests answer malformedRequest, a request about another CA unauthorized; always HTTP 200.',
    responses: { 200: { mediaType: 'application/ocsp-response', description: 'a DER OCSPResponse' } },
  },
  {
    method: 'get',
    path: '/pki/:hubId/ocsp/:request',
    scope: 'open',
    tag: 'PKI',
    summary: 'OCSP by GET: the DER OCSPRequest as base64url, or base64 URL-encoded',
    responses: { 200: { mediaType: 'application/ocsp-response', description: 'a DER OCSPResponse' } },
  },
];
