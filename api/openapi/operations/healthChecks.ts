/** Health checks. */
import * as healthChecks from '../../routes/healthChecks.js';
import * as c from '../components.js';
import type { Operation } from '../operation.js';

export const healthCheckOperations: Operation[] = [
  {
    method: 'post',
    path: '/health-checks',
    scope: 'hub',
    tag: 'Health checks',
    summary: 'Create a health check',
    body: healthChecks.createSchema,
    responses: { 201: c.HealthCheck },
  },
  {
    method: 'get',
    path: '/health-checks',
    scope: 'hub',
    tag: 'Health checks',
    summary: 'List health checks',
    paged: true,
    responses: { 200: c.page(c.HealthCheck, 'HealthCheck') },
  },
  { method: 'get', path: '/health-checks/:id', scope: 'hub', tag: 'Health checks', summary: 'Get a health check', responses: { 200: c.HealthCheck } },
  {
    method: 'patch',
    path: '/health-checks/:id',
    scope: 'hub',
    tag: 'Health checks',
    summary: 'Update a health check',
    body: healthChecks.patchSchema,
    responses: { 200: c.HealthCheck },
  },
  {
    method: 'put',
    path: '/health-checks/:id',
    scope: 'hub',
    tag: 'Health checks',
    summary: 'Replace a health check',
    body: healthChecks.putSchema,
    responses: { 200: c.HealthCheck },
  },
  { method: 'delete', path: '/health-checks/:id', scope: 'hub', tag: 'Health checks', summary: 'Delete a health check', responses: { 204: null } },
  {
    method: 'post',
    path: ['/health-checks/:id\\:execute', '/health-checks/:id/execute'],
    scope: 'hub',
    tag: 'Health checks',
    summary: 'Run a health check now and record the result',
    responses: { 200: c.HealthCheckResult },
  },
  {
    method: 'post',
    path: ['/health-checks/:id\\:test', '/health-checks/:id/test'],
    scope: 'hub',
    tag: 'Health checks',
    summary: 'Try a health check, optionally with unsaved values; saves nothing',
    body: healthChecks.patchSchema,
    responses: { 200: c.HealthCheckResult },
  },
];
