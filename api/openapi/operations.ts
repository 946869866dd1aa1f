/**
 * Every operation of the API, one entry each, as the route files register it, listed by resource in ./operations/. Request bodies are the route files'
 * own zod schemas (imported, never copied); responses are the schemas of ./components.ts.
 *
 * TO ADD A ROUTE: add one entry to its resource's file in ./operations/ (method, path exactly as given to `routes.<scope>.<method>(...)`, the scope
 * whose guard it uses, and its responses), exporting the route's zod body schema from its route file if it has one.
 * test/api/http/openapi.test.ts fails while a registered route has no entry here, and the contract check in the test helpers
 * fails while a response does not match its schema.
 */
import { discoveryOperations } from './operations/discovery.js';
import { operatorOperations } from './operations/operator.js';
import { shareOperations } from './operations/shares.js';
import { customFrontendOperations } from './operations/customFrontends.js';
import { authProviderOperations } from './operations/authProviders.js';
import { pkiOperations } from './operations/pki.js';
import { healthCheckOperations } from './operations/healthChecks.js';
import { ipsecOperations } from './operations/ipsec.js';
import { metricsOperations } from './operations/metrics.js';
import { executionOperations } from './operations/executions.js';
import type { Operation } from './operation.js';

export const operations: Operation[] = [
  ...discoveryOperations,
  ...operatorOperations,
  ...shareOperations,
  ...customFrontendOperations,
  ...authProviderOperations,
  ...pkiOperations,
  ...healthCheckOperations,
  ...ipsecOperations,
  ...metricsOperations,
  ...executionOperations,
];
