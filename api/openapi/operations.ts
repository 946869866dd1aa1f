/**
 * Every operation of the API, one entry each, as the route files register it. Request bodies are the route files'
 * own zod schemas (imported, never copied); responses are the schemas of ./components.ts.
 *
 * TO ADD A ROUTE: add one entry below (method, path exactly as given to `routes.<scope>.<method>(...)`, the scope
 * whose guard it uses, and its responses), exporting the route's zod body schema from its route file if it has one.
 * test/api/http/openapi.test.ts fails while a registered route has no entry here, and the contract check in the test helpers
 * fails while a response does not match its schema.
 */
import { z, type ZodType } from 'zod';
import * as admin from '../routes/admin.js';
import * as agents from '../routes/agents.js';
import * as authProviders from '../routes/authProviders.js';
import * as tokens from '../routes/certificateRequestTokens.js';
import * as clientCertificates from '../routes/clientCertificates.js';
import * as customFrontends from '../routes/customFrontends.js';
import * as enrollment from '../routes/enrollment.js';
import * as environments from '../routes/environments.js';
import * as executions from '../routes/executions.js';
import * as healthChecks from '../routes/healthChecks.js';
import * as ipsec from '../routes/ipsec.js';
import * as shares from '../routes/shares.js';
import * as c from './components.js';

export type Scope = 'open' | 'admin' | 'account' | 'hub';
export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

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

const metricsQuery = z.object({
  duration: z.string().optional().meta({ description: 'ISO 8601 duration of the window ending now, e.g. PT1H (default), P1D' }),
  range: z.string().optional().meta({ description: 'alias of duration' }),
  step: z.string().optional().meta({ description: 'ISO 8601 bucket size; chosen from the window when absent' }),
});
const tunnelMetricsQuery = z.object({ window: z.enum(['30m', '1h', '1d', '7d']).optional().meta({ description: 'default 1h' }) });
const ipsecListQuery = z.object({
  status: z.string().optional(),
  name: z.string().optional(),
  locationId: z.string().optional(),
});
const executionFilters = z.object({
  status: z.string().optional(),
  type: z.string().optional(),
  resourceType: z.string().optional(),
  resourceId: z.string().optional(),
});
const pkiFormat = z.object({ format: z.enum(['der', 'pem']).optional().meta({ description: 'der (default) or pem' }) });
const location = { 202: { Location: 'the execution: /hub/{hubId}/executions/{id}' } };

export const operations: Operation[] = [
  // ---- operations and discovery ----
  { method: 'get', path: '/healthz', scope: 'open', tag: 'Operations', summary: 'Liveness: PostgreSQL and Redis answer', responses: { 200: c.Health, 503: c.Health } },
  { method: 'get', path: '/openapi.json', scope: 'open', tag: 'Operations', summary: 'This document', responses: { 200: z.record(z.string(), z.unknown()).meta({ description: 'OpenAPI 3.1 document' }) } },
  { method: 'get', path: '/', scope: 'open', tag: 'Operations', summary: 'Where things are (a browser is sent to /console)', responses: { 200: z.object({ name: z.string(), console: z.string(), docs: z.string(), openapi: z.string(), health: z.string() }) } },
  { method: 'get', path: '/console', scope: 'open', tag: 'Operations', summary: 'The web console (HTML)', responses: { 200: { mediaType: 'text/html', description: 'the console page' } } },
  { method: 'get', path: '/console/:file', scope: 'open', tag: 'Operations', summary: 'Files of the web console', responses: { 200: { mediaType: 'application/octet-stream', description: 'a script or stylesheet' } } },
  { method: 'get', path: '/docs', scope: 'open', tag: 'Operations', summary: 'API reference page (HTML)', responses: { 200: { mediaType: 'text/html', description: 'the docs page' } } },
  { method: 'get', path: '/docs/:file', scope: 'open', tag: 'Operations', summary: 'Assets of the docs page', responses: { 200: { mediaType: 'application/octet-stream', description: 'a script, stylesheet or image' } } },
  {
    method: 'get',
    path: '/metrics',
    scope: 'admin',
    tag: 'Operations',
    summary: 'Prometheus metrics of this web process',
    responses: { 200: { mediaType: 'text/plain', description: 'Prometheus text exposition format 0.0.4', example: 'edgehub_http_requests_total{route="/healthz",method="GET",status="200",process="web"} 3' } },
  },
  { method: 'get', path: '/hub/v2/public/.well-known/jwks.json', scope: 'open', tag: 'PKI', summary: 'Enrollment JWT signing keys (JWKS)', responses: { 200: c.Jwks } },
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
      'Answers good, revoked (time and reason) or unknown per certificate, signed by the CA\'s delegated responder; echoes a nonce. ' +
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

  // ---- operator API ----
  { method: 'post', path: '/admin/v1/hubs', scope: 'admin', tag: 'Operator', summary: 'Create a hub', body: admin.createHubSchema, responses: { 201: c.Hub } },
  { method: 'get', path: '/admin/v1/hubs', scope: 'admin', tag: 'Operator', summary: 'List hubs', paged: true, responses: { 200: c.page(c.Hub, 'Hub') } },
  { method: 'get', path: '/admin/v1/hubs/:hubId', scope: 'admin', tag: 'Operator', summary: 'Get a hub', responses: { 200: c.Hub } },
  { method: 'delete', path: '/admin/v1/hubs/:hubId', scope: 'admin', tag: 'Operator', summary: 'Delete a hub and everything in it (its keys stop working, its shares stop answering)', responses: { 204: null } },
  { method: 'get', path: '/admin/v1/hubs/:hubId/api-keys', scope: 'admin', tag: 'Operator', summary: "The hub's API keys (never their tokens)", responses: { 200: z.array(c.ApiKey) } },
  { method: 'patch', path: '/admin/v1/hubs/:hubId', scope: 'admin', tag: 'Operator', summary: 'Update a hub', body: admin.updateHubSchema, responses: { 200: c.Hub } },
  { method: 'post', path: '/admin/v1/hubs/:hubId/api-keys', scope: 'admin', tag: 'Operator', summary: 'Create an API key (the token is shown once)', body: admin.createKeySchema, responses: { 201: c.ApiKey } },
  { method: 'delete', path: '/admin/v1/hubs/:hubId/api-keys/:id', scope: 'admin', tag: 'Operator', summary: 'Revoke an API key', responses: { 200: c.ApiKey } },
  { method: 'post', path: '/admin/v1/frontends', scope: 'admin', tag: 'Operator', summary: 'Create a standard frontend', body: admin.createFrontendSchema, responses: { 201: c.Frontend } },
  { method: 'post', path: '/admin/v1/usage', scope: 'admin', tag: 'Operator', summary: 'Ingest usage samples', body: c.UsageRequest, responses: { 202: c.UsageAccepted } },
  { method: 'post', path: '/admin/v1/signing-keys\\:rotate', scope: 'admin', tag: 'Operator', summary: 'Rotate the enrollment signing key now', responses: { 200: c.RotatedKey }, errors: [503] },
  {
    method: 'post',
    path: '/admin/v1/signing-keys/:kid\\:revoke',
    scope: 'admin',
    tag: 'Operator',
    summary: 'Retire a compromised signing key at once',
    responses: { 200: c.RevokedKey },
    errors: [400, 404],
  },

  // ---- shares, environments, frontends ----
  { method: 'post', path: '/shares', scope: 'hub', tag: 'Shares', summary: 'Create a share', body: shares.createSchema, responses: { 201: c.Share } },
  { method: 'get', path: '/shares', scope: 'hub', tag: 'Shares', summary: 'List shares', paged: true, responses: { 200: c.page(c.Share, 'Share') } },
  { method: 'get', path: '/shares/:zId', scope: 'hub', tag: 'Shares', summary: 'Get a share', responses: { 200: c.Share } },
  { method: 'patch', path: '/shares/:zId', scope: 'hub', tag: 'Shares', summary: "Change a share's access rules, inspection or TCP idle timeout", body: shares.updateSchema, responses: { 200: c.Share } },
  { method: 'delete', path: '/shares/:zId', scope: 'hub', tag: 'Shares', summary: 'Delete a share', responses: { 204: null } },
  { method: 'get', path: '/shares/:shareId/requests', scope: 'hub', tag: 'Shares', summary: 'Recorded exchanges of a share with inspect, newest first', responses: { 200: z.array(c.InspectedExchange) }, errors: [503] },
  {
    method: 'get',
    path: '/shares/:shareId/requests/live',
    scope: 'hub',
    tag: 'Shares',
    summary: 'New exchanges of a share as Server-Sent Events (event `exchange`, data: the summary, id: its id; Last-Event-ID resumes)',
    responses: { 200: { mediaType: 'text/event-stream', description: 'one event per exchange recorded' } },
  },
  { method: 'get', path: '/shares/:shareId/requests/:id', scope: 'hub', tag: 'Shares', summary: 'One recorded exchange with its headers and bodies', responses: { 200: c.InspectedExchangeDetail }, errors: [503] },
  {
    method: 'post',
    path: '/shares/:shareId/requests/:id/replay',
    scope: 'hub',
    tag: 'Shares',
    summary: "Send a recorded request again through an edge (the share's agent or direct path, egress policy included); the new exchange",
    responses: { 201: c.InspectedExchange },
    errors: [503],
  },
  { method: 'post', path: '/environments', scope: 'hub', tag: 'Environments', summary: 'Create an environment', body: environments.createSchema, responses: { 201: c.Environment } },
  { method: 'get', path: '/environments', scope: 'hub', tag: 'Environments', summary: 'List environments', paged: true, responses: { 200: c.page(c.Environment, 'Environment') } },
  { method: 'get', path: '/environments/:envZId', scope: 'hub', tag: 'Environments', summary: 'Get an environment with its agents', responses: { 200: c.Environment } },
  { method: 'patch', path: '/environments/:envZId', scope: 'hub', tag: 'Environments', summary: "Change an environment's description or reach (a reach change is recorded as an execution)", body: environments.updateSchema, responses: { 200: c.Environment } },
  { method: 'delete', path: '/environments/:envZId', scope: 'hub', tag: 'Environments', summary: 'Delete an environment that hosts no share (its agents are revoked with it; 409 while it hosts shares)', responses: { 204: null } },
  { method: 'get', path: '/account', scope: 'account', tag: 'Agents', summary: "The API key's hub (the command line's `edgehub share` starts here)", responses: { 200: z.object({ hubId: z.string(), name: z.string() }) } },
  { method: 'post', path: '/environments/:envZId/agent-enrollment', scope: 'hub', tag: 'Agents', summary: 'A one-time JWT that enrolls one agent of the environment', body: agents.agentEnrollmentSchema, responses: { 201: c.AgentEnrollment } },
  { method: 'get', path: '/environments/:envZId/agents', scope: 'hub', tag: 'Agents', summary: "The environment's agents and where they are connected", responses: { 200: z.array(c.Agent) } },
  { method: 'delete', path: '/environments/:envZId/agents/:id', scope: 'hub', tag: 'Agents', summary: 'Revoke an agent (its connections close within 2 s)', responses: { 204: null } },
  { method: 'post', path: ['/hub/v2/:hubId/agents/enroll', '/hub/:hubId/agents/enroll'], scope: 'open', tag: 'Agents', summary: "Enroll an agent: its CSR and the environment's one-time JWT", body: agents.agentEnrollSchema, responses: { 201: c.AgentIdentity }, errors: [403] },
  { method: 'post', path: ['/hub/v2/:hubId/agents/:agentId/renew', '/hub/:hubId/agents/:agentId/renew'], scope: 'open', tag: 'Agents', summary: "Renew an agent's certificate: a CSR for its new key and a proof signed by its current key", body: agents.agentRenewSchema, responses: { 200: c.AgentIdentity }, errors: [403] },
  { method: 'get', path: '/downloads/edgehub-agent.tgz', scope: 'open', tag: 'Agents', summary: 'The agent package (npm install -g <this URL> installs the edgehub command)', responses: { 200: { mediaType: 'application/gzip', description: 'npm package tarball' } }, errors: [503] },
  { method: 'get', path: '/downloads/edgehub-linux-x64', scope: 'open', tag: 'Agents', summary: 'The agent as one executable for Linux x64 (no Node needed), when built', responses: { 200: { mediaType: 'application/octet-stream', description: 'executable' } }, errors: [404] },
  { method: 'get', path: ['/hub/v2/public/frontend-ca.pem', '/hub/public/frontend-ca.pem'], scope: 'open', tag: 'Frontends', summary: "The CA of the edge's certificates for standard frontends (PEM)", responses: { 200: { mediaType: 'application/x-pem-file', description: 'PEM certificates' } } },
  { method: 'get', path: '/frontends', scope: 'hub', tag: 'Frontends', summary: "Standard frontends and the hub's active custom frontends", responses: { 200: z.array(c.Frontend) } },
  { method: 'get', path: '/account/frontends', scope: 'account', tag: 'Frontends', summary: "Frontends of the API key's hub", responses: { 200: z.array(c.Frontend) } },

  // ---- custom frontends ----
  { method: 'post', path: '/custom-frontends', scope: 'hub', tag: 'Custom frontends', summary: 'Create a custom frontend', body: customFrontends.createSchema, responses: { 201: c.CustomFrontend } },
  { method: 'get', path: '/custom-frontends', scope: 'hub', tag: 'Custom frontends', summary: 'List custom frontends', paged: true, responses: { 200: c.page(c.CustomFrontend, 'CustomFrontend') } },
  { method: 'get', path: '/custom-frontends/:id', scope: 'hub', tag: 'Custom frontends', summary: 'Get a custom frontend', responses: { 200: c.CustomFrontend } },
  { method: 'get', path: '/custom-frontends/:id/dns-records', scope: 'hub', tag: 'Custom frontends', summary: 'DNS records to publish', responses: { 200: c.DnsRecords } },
  { method: 'patch', path: '/custom-frontends/:id', scope: 'hub', tag: 'Custom frontends', summary: 'Change its auth providers', body: customFrontends.patchSchema, responses: { 200: c.CustomFrontend } },
  { method: 'delete', path: '/custom-frontends/:id', scope: 'hub', tag: 'Custom frontends', summary: 'Delete a custom frontend', responses: { 204: null } },

  // ---- auth providers ----
  { method: 'post', path: '/auth-providers', scope: 'hub', tag: 'Auth providers', summary: 'Create an auth provider', body: authProviders.createSchema, responses: { 201: c.AuthProvider } },
  { method: 'get', path: '/auth-providers', scope: 'hub', tag: 'Auth providers', summary: 'List auth providers', paged: true, responses: { 200: c.page(c.AuthProvider, 'AuthProvider') } },
  { method: 'get', path: '/auth-providers/:id', scope: 'hub', tag: 'Auth providers', summary: 'Get an auth provider', responses: { 200: c.AuthProvider } },
  { method: 'patch', path: '/auth-providers/:id', scope: 'hub', tag: 'Auth providers', summary: 'Update an auth provider', body: authProviders.patchSchema, responses: { 200: c.AuthProvider } },
  { method: 'delete', path: '/auth-providers/:id', scope: 'hub', tag: 'Auth providers', summary: 'Delete an auth provider', responses: { 204: null } },

  // ---- PKI: certificate request tokens, client certificates, enrollment ----
  { method: 'get', path: '/certificate-request-tokens', scope: 'hub', tag: 'PKI', summary: 'List certificate request tokens', paged: true, responses: { 200: c.page(c.CertificateRequestToken, 'CertificateRequestToken') } },
  { method: 'post', path: '/certificate-request-tokens', scope: 'hub', tag: 'PKI', summary: 'Create a certificate request token', body: tokens.createSchema, responses: { 201: c.CertificateRequestToken } },
  {
    method: 'get',
    path: ['/certificate-request-tokens/by-token/:token', '/certificate-request-tokens/token/:token'],
    scope: 'hub',
    tag: 'PKI',
    summary: 'Find a certificate request token by its token string',
    responses: { 200: c.CertificateRequestToken },
  },
  { method: 'get', path: '/certificate-request-tokens/:id', scope: 'hub', tag: 'PKI', summary: 'Get a certificate request token', responses: { 200: c.CertificateRequestToken } },
  { method: 'patch', path: '/certificate-request-tokens/:id', scope: 'hub', tag: 'PKI', summary: 'Update a certificate request token', body: tokens.patchSchema, responses: { 200: c.CertificateRequestToken } },
  { method: 'put', path: '/certificate-request-tokens/:id', scope: 'hub', tag: 'PKI', summary: 'Replace a certificate request token', body: tokens.createSchema, responses: { 200: c.CertificateRequestToken } },
  { method: 'delete', path: '/certificate-request-tokens/:id', scope: 'hub', tag: 'PKI', summary: 'Delete a certificate request token', responses: { 200: c.Deleted } },
  { method: 'get', path: '/certificate-request-tokens/:id/enrollment-jwt', scope: 'hub', tag: 'PKI', summary: 'The enrollment JWT of a token', responses: { 200: c.EnrollmentJwt } },
  { method: 'get', path: '/client-certificates', scope: 'hub', tag: 'PKI', summary: 'List client certificates', paged: true, responses: { 200: c.page(c.ClientCertificateSummary, 'ClientCertificateSummary') } },
  { method: 'post', path: '/client-certificates', scope: 'hub', tag: 'PKI', summary: 'Upload or issue a client certificate', body: clientCertificates.createSchema, responses: { 201: c.ClientCertificateSummary }, errors: [503] },
  { method: 'get', path: '/client-certificates/:id', scope: 'hub', tag: 'PKI', summary: 'Get a client certificate (with its PEM)', responses: { 200: c.ClientCertificate } },
  { method: 'patch', path: '/client-certificates/:id', scope: 'hub', tag: 'PKI', summary: 'Update a client certificate', body: clientCertificates.patchSchema, responses: { 200: c.ClientCertificate } },
  { method: 'put', path: '/client-certificates/:id', scope: 'hub', tag: 'PKI', summary: 'Replace a client certificate', body: clientCertificates.createSchema, responses: { 200: c.ClientCertificate } },
  {
    method: 'delete',
    path: '/client-certificates/:id',
    scope: 'hub',
    tag: 'PKI',
    summary: "Delete a client certificate; one the hub's CA issued is revoked (in its CRL and OCSP answers within seconds)",
    query: z.object({ reason: z.enum(['unspecified', 'keyCompromise', 'affiliationChanged', 'superseded', 'cessationOfOperation']).optional().meta({ description: 'RFC 5280 revocation reason (default unspecified)' }) }),
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

  // ---- health checks ----
  { method: 'post', path: '/health-checks', scope: 'hub', tag: 'Health checks', summary: 'Create a health check', body: healthChecks.createSchema, responses: { 201: c.HealthCheck } },
  { method: 'get', path: '/health-checks', scope: 'hub', tag: 'Health checks', summary: 'List health checks', paged: true, responses: { 200: c.page(c.HealthCheck, 'HealthCheck') } },
  { method: 'get', path: '/health-checks/:id', scope: 'hub', tag: 'Health checks', summary: 'Get a health check', responses: { 200: c.HealthCheck } },
  { method: 'patch', path: '/health-checks/:id', scope: 'hub', tag: 'Health checks', summary: 'Update a health check', body: healthChecks.patchSchema, responses: { 200: c.HealthCheck } },
  { method: 'put', path: '/health-checks/:id', scope: 'hub', tag: 'Health checks', summary: 'Replace a health check', body: healthChecks.putSchema, responses: { 200: c.HealthCheck } },
  { method: 'delete', path: '/health-checks/:id', scope: 'hub', tag: 'Health checks', summary: 'Delete a health check', responses: { 204: null } },
  { method: 'post', path: ['/health-checks/:id\\:execute', '/health-checks/:id/execute'], scope: 'hub', tag: 'Health checks', summary: 'Run a health check now and record the result', responses: { 200: c.HealthCheckResult } },
  {
    method: 'post',
    path: ['/health-checks/:id\\:test', '/health-checks/:id/test'],
    scope: 'hub',
    tag: 'Health checks',
    summary: 'Try a health check, optionally with unsaved values; saves nothing',
    body: healthChecks.patchSchema,
    responses: { 200: c.HealthCheckResult },
  },

  // ---- IPsec ----
  { method: 'post', path: '/ipsec-tunnels', scope: 'hub', tag: 'IPsec', summary: 'Create an IPsec tunnel (provisioned asynchronously)', body: ipsec.createTunnelSchema, responses: { 202: c.IpsecTunnel }, headers: location },
  { method: 'get', path: '/ipsec-tunnels', scope: 'hub', tag: 'IPsec', summary: 'List IPsec tunnels', paged: true, query: ipsecListQuery, responses: { 200: c.page(c.IpsecTunnel, 'IpsecTunnel') } },
  { method: 'get', path: '/ipsec-tunnels/:id', scope: 'hub', tag: 'IPsec', summary: 'Get an IPsec tunnel', responses: { 200: c.IpsecTunnel } },
  { method: 'delete', path: '/ipsec-tunnels/:id', scope: 'hub', tag: 'IPsec', summary: 'Delete an IPsec tunnel (torn down asynchronously)', responses: { 202: c.IpsecTunnel }, headers: location },
  { method: 'get', path: '/ipsec-tunnels/:id/tunnel-config', scope: 'hub', tag: 'IPsec', summary: 'Tunnel configuration and state', responses: { 200: c.TunnelConfig } },
  {
    method: 'get',
    path: '/ipsec-tunnels/:id/sample-config',
    scope: 'hub',
    tag: 'IPsec',
    summary: 'Sample customer gateway configuration (contains the pre-shared key)',
    query: z.object({ vendor: z.enum(['strongswan', 'generic']).optional() }),
    responses: { 200: { mediaType: 'text/plain', description: 'strongSwan swanctl.conf or generic settings' } },
    errors: [406],
  },
  { method: 'get', path: '/ipsec-tunnels/:id/metrics', scope: 'hub', tag: 'IPsec', summary: 'Traffic of the tunnel (sum of its shares)', query: tunnelMetricsQuery, responses: { 200: c.MetricSeries } },
  { method: 'post', path: '/ipsec-shares', scope: 'hub', tag: 'IPsec', summary: 'Create an IPsec share', body: ipsec.fullShareSchema, responses: { 202: c.IpsecShare }, headers: location },
  { method: 'get', path: '/ipsec-shares', scope: 'hub', tag: 'IPsec', summary: 'List IPsec shares', paged: true, query: ipsecListQuery, responses: { 200: c.page(c.IpsecShare, 'IpsecShare') } },
  { method: 'get', path: '/ipsec-shares/:id', scope: 'hub', tag: 'IPsec', summary: 'Get an IPsec share', responses: { 200: c.IpsecShare } },
  { method: 'put', path: '/ipsec-shares/:id', scope: 'hub', tag: 'IPsec', summary: 'Replace an IPsec share', body: ipsec.fullShareSchema, responses: { 202: c.IpsecShare }, headers: location },
  { method: 'patch', path: '/ipsec-shares/:id', scope: 'hub', tag: 'IPsec', summary: 'Update an IPsec share', body: ipsec.partialShareSchema, responses: { 202: c.IpsecShare }, headers: location },
  { method: 'delete', path: '/ipsec-shares/:id', scope: 'hub', tag: 'IPsec', summary: 'Delete an IPsec share', responses: { 202: c.IpsecShare }, headers: location },
  { method: 'get', path: '/ipsec-shares/:id/metrics', scope: 'hub', tag: 'IPsec', summary: 'Traffic of an IPsec share', query: metricsQuery, responses: { 200: c.MetricSeries } },

  // ---- metrics ----
  { method: 'get', path: '/metrics', scope: 'hub', tag: 'Metrics', summary: 'Traffic of the hub', query: metricsQuery, responses: { 200: c.MetricSeries } },
  { method: 'get', path: ['/metrics/sparklines', '/sparklines'], scope: 'hub', tag: 'Metrics', summary: 'A sparkline per share over the last day', responses: { 200: c.Sparklines } },
  { method: 'get', path: '/shares/:shareId/metrics', scope: 'hub', tag: 'Metrics', summary: 'Traffic of a share', query: metricsQuery, responses: { 200: c.MetricSeries } },
  { method: 'get', path: '/environments/:envZId/metrics', scope: 'hub', tag: 'Metrics', summary: 'Traffic of an environment', query: metricsQuery, responses: { 200: c.MetricSeries } },
  { method: 'get', path: '/hub/shares/:shareId/metrics', scope: 'account', tag: 'Metrics', summary: "Traffic of a share of the API key's hub", query: metricsQuery, responses: { 200: c.MetricSeries } },
  { method: 'get', path: '/hub/environments/:envZId/metrics', scope: 'account', tag: 'Metrics', summary: "Traffic of an environment of the API key's hub", query: metricsQuery, responses: { 200: c.MetricSeries } },

  // ---- executions ----
  { method: 'get', path: '/executions\\:find', scope: 'hub', tag: 'Executions', summary: 'Find an execution by processId', query: executions.findSchema, responses: { 200: c.Execution } },
  { method: 'get', path: '/executions/:id', scope: 'hub', tag: 'Executions', summary: 'Get an execution', responses: { 200: c.Execution } },
  { method: 'get', path: '/executions', scope: 'hub', tag: 'Executions', summary: 'List executions (the job monitor and audit trail)', paged: true, query: executionFilters, responses: { 200: c.page(c.Execution, 'Execution') } },
];
