/**
 * Response schemas of the OpenAPI document: the exact JSON the presenters (api/presenters) produce. Request schemas
 * are not here: the document takes those from the route files themselves (their exported zod schemas).
 * Objects are strict (no extra properties), so a presenter that changes shape fails the contract check of the tests
 * (test/helpers/contract.ts) until the schema here follows it.
 */
export { ErrorBody, page } from './components/base.js';
export * from './components/hubs.js';
export * from './components/shares.js';
export * from './components/executions.js';
export * from './components/pki.js';
export * from './components/frontends.js';
export * from './components/healthChecks.js';
export * from './components/metrics.js';
export * from './components/ipsec.js';
export * from './components/inspect.js';
