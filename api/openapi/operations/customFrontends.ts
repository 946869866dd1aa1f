/** Custom frontends. */
import * as customFrontends from '../../routes/customFrontends.js';
import * as c from '../components.js';
import type { Operation } from '../operation.js';

export const customFrontendOperations: Operation[] = [
  {
    method: 'post',
    path: '/custom-frontends',
    scope: 'hub',
    tag: 'Custom frontends',
    summary: 'Create a custom frontend',
    body: customFrontends.createSchema,
    responses: { 201: c.CustomFrontend },
  },
  {
    method: 'get',
    path: '/custom-frontends',
    scope: 'hub',
    tag: 'Custom frontends',
    summary: 'List custom frontends',
    paged: true,
    responses: { 200: c.page(c.CustomFrontend, 'CustomFrontend') },
  },
  {
    method: 'get',
    path: '/custom-frontends/:id',
    scope: 'hub',
    tag: 'Custom frontends',
    summary: 'Get a custom frontend',
    responses: { 200: c.CustomFrontend },
  },
  {
    method: 'get',
    path: '/custom-frontends/:id/dns-records',
    scope: 'hub',
    tag: 'Custom frontends',
    summary: 'DNS records to publish',
    responses: { 200: c.DnsRecords },
  },
  {
    method: 'patch',
    path: '/custom-frontends/:id',
    scope: 'hub',
    tag: 'Custom frontends',
    summary: 'Change its auth providers',
    body: customFrontends.patchSchema,
    responses: { 200: c.CustomFrontend },
  },
  { method: 'delete', path: '/custom-frontends/:id', scope: 'hub', tag: 'Custom frontends', summary: 'Delete a custom frontend', responses: { 204: null } },
];
