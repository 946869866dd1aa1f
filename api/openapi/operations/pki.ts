/** PKI: certificate request tokens, client certificates, enrollment. */
import { z } from 'zod';
import * as tokens from '../../routes/certificateRequestTokens.js';
import * as clientCertificates from '../../routes/clientCertificates.js';
import * as enrollment from '../../routes/enrollment.js';
import * as c from '../components.js';
import type { Operation } from '../operation.js';

export const pkiOperations: Operation[] = [
  {
    method: 'get',
    path: '/certificate-request-tokens',
    scope: 'hub',
    tag: 'PKI',
    summary: 'List certificate request tokens',
    paged: true,
    responses: { 200: c.page(c.CertificateRequestToken, 'CertificateRequestToken') },
  },
  {
    method: 'post',
    path: '/certificate-request-tokens',
    scope: 'hub',
    tag: 'PKI',
    summary: 'Create a certificate request token',
    body: tokens.createSchema,
    responses: { 201: c.CertificateRequestToken },
  },
  {
    method: 'get',
    path: ['/certificate-request-tokens/by-token/:token', '/certificate-request-tokens/token/:token'],
    scope: 'hub',
    tag: 'PKI',
    summary: 'Find a certificate request token by its token string',
    responses: { 200: c.CertificateRequestToken },
  },
  {
    method: 'get',
    path: '/certificate-request-tokens/:id',
    scope: 'hub',
    tag: 'PKI',
    summary: 'Get a certificate request token',
    responses: { 200: c.CertificateRequestToken },
  },
  {
    method: 'patch',
    path: '/certificate-request-tokens/:id',
    scope: 'hub',
    tag: 'PKI',
    summary: 'Update a certificate request token',
    body: tokens.patchSchema,
    responses: { 200: c.CertificateRequestToken },
  },
  {
    method: 'put',
    path: '/certificate-request-tokens/:id',
    scope: 'hub',
    tag: 'PKI',
    summary: 'Replace a certificate request token',
    body: tokens.createSchema,
    responses: { 200: c.CertificateRequestToken },
  },
  {
    method: 'delete',
    path: '/certificate-request-tokens/:id',
    scope: 'hub',
    tag: 'PKI',
    summary: 'Delete a certificate request token',
    responses: { 200: c.Deleted },
  },
  {
    method: 'get',
    path: '/certificate-request-tokens/:id/enrollment-jwt',
    scope: 'hub',
    tag: 'PKI',
    summary: 'The enrollment JWT of a token',
    responses: { 200: c.EnrollmentJwt },
  },
  {
    method: 'get',
    path: '/client-certificates',
    scope: 'hub',
    tag: 'PKI',
    summary: 'List client certificates',
    paged: true,
    responses: { 200: c.page(c.ClientCertificateSummary, 'ClientCertificateSummary') },
  },
  {
    method: 'post',
    path: '/client-certificates',
    scope: 'hub',
    tag: 'PKI',
    summary: 'Upload or issue a client certificate',
    body: clientCertificates.createSchema,
    responses: { 201: c.ClientCertificateSummary },
    errors: [503],
  },
  {
    method: 'get',
    path: '/client-certificates/:id',
    scope: 'hub',
    tag: 'PKI',
    summary: 'Get a client certificate (with its PEM)',
    responses: { 200: c.ClientCertificate },
  },
  {
    method: 'patch',
    path: '/client-certificates/:id',
    scope: 'hub',
    tag: 'PKI',
    summary: 'Update a client certificate',
    body: clientCertificates.patchSchema,
    responses: { 200: c.ClientCertificate },
  },
  {
    method: 'put',
    path: '/client-certificates/:id',
    scope: 'hub',
    tag: 'PKI',
    summary: 'Replace a client certificate',
    body: clientCertificates.createSchema,
    responses: { 200: c.ClientCertificate },
  },
  {
    method: 'delete',
    path: '/client-certificates/:id',
    scope: 'hub',
    tag: 'PKI',
    summary: "Delete a client certificate; one the hub's CA issued is revoked (in its CRL and OCSP answers within seconds)",
    query: z.object({
      reason: z
        .enum(['unspecified', 'keyCompromise', 'affiliationChanged', 'superseded', 'cessationOfOperation'])
        .optional()
        .meta({ description: 'RFC 5280 revocation reason (default unspecified)' }),
    }),
    responses: { 200: c.Deleted },
  },
  {
    method: 'post',
    path: ['/hub/v2/:hubId/client-certificates/enroll', '/hub/:hubId/client-certificates/enroll'],
    scope: 'open',
    tag: 'PKI',
    summary: 'Enroll with an enrollment JWT and a CSR (the JWT is the credential)',
    description:
      'With header `X-Validate: true` nothing is issued: the answer (200) lists the violations. A retry with the same JWT and the same public key after an issuance that outlasted the first request answers 200 with the certificate that was issued.',
    body: enrollment.enrollSchema,
    responses: { 201: c.ClientCertificate, 200: z.union([c.EnrollmentViolations, c.ClientCertificate]) },
    errors: [401, 403, 503],
  },
  {
    method: 'post',
    path: ['/hub/v2/:hubId/client-certificates/token/:token', '/hub/:hubId/client-certificates/token/:token'],
    scope: 'open',
    tag: 'PKI',
    summary: 'Redeem a certificate request token (the token in the path is the credential)',
    body: enrollment.tokenSchema,
    responses: { 201: c.ClientCertificate },
    errors: [401, 403, 503],
  },
];
