/** The operator API (admin token): hubs, their quotas and signing keys. */
import { z } from 'zod';
import * as admin from '../../routes/admin.js';
import * as c from '../components.js';
import type { Operation } from '../operation.js';

export const operatorOperations: Operation[] = [
  { method: 'post', path: '/admin/v1/hubs', scope: 'admin', tag: 'Operator', summary: 'Create a hub', body: admin.createHubSchema, responses: { 201: c.Hub } },
  { method: 'get', path: '/admin/v1/hubs', scope: 'admin', tag: 'Operator', summary: 'List hubs', paged: true, responses: { 200: c.page(c.Hub, 'Hub') } },
  { method: 'get', path: '/admin/v1/hubs/:hubId', scope: 'admin', tag: 'Operator', summary: 'Get a hub', responses: { 200: c.Hub } },
  {
    method: 'delete',
    path: '/admin/v1/hubs/:hubId',
    scope: 'admin',
    tag: 'Operator',
    summary: 'Delete a hub and everything in it (its keys stop working, its shares stop answering)',
    responses: { 204: null },
  },
  {
    method: 'get',
    path: '/admin/v1/hubs/:hubId/api-keys',
    scope: 'admin',
    tag: 'Operator',
    summary: "The hub's API keys (never their tokens)",
    responses: { 200: z.array(c.ApiKey) },
  },
  {
    method: 'patch',
    path: '/admin/v1/hubs/:hubId',
    scope: 'admin',
    tag: 'Operator',
    summary: 'Update a hub',
    body: admin.updateHubSchema,
    responses: { 200: c.Hub },
  },
  {
    method: 'post',
    path: '/admin/v1/hubs/:hubId/api-keys',
    scope: 'admin',
    tag: 'Operator',
    summary: 'Create an API key (the token is shown once)',
    body: admin.createKeySchema,
    responses: { 201: c.ApiKey },
  },
  { method: 'delete', path: '/admin/v1/hubs/:hubId/api-keys/:id', scope: 'admin', tag: 'Operator', summary: 'Revoke an API key', responses: { 200: c.ApiKey } },
  {
    method: 'post',
    path: '/admin/v1/frontends',
    scope: 'admin',
    tag: 'Operator',
    summary: 'Create a standard frontend',
    body: admin.createFrontendSchema,
    responses: { 201: c.Frontend },
  },
  {
    method: 'post',
    path: '/admin/v1/usage',
    scope: 'admin',
    tag: 'Operator',
    summary: 'Ingest usage samples',
    body: c.UsageRequest,
    responses: { 202: c.UsageAccepted },
  },
  {
    method: 'post',
    path: '/admin/v1/signing-keys\\:rotate',
    scope: 'admin',
    tag: 'Operator',
    summary: 'Rotate the enrollment signing key now',
    responses: { 200: c.RotatedKey },
    errors: [503],
  },
  {
    method: 'post',
    path: '/admin/v1/signing-keys/:kid\\:revoke',
    scope: 'admin',
    tag: 'Operator',
    summary: 'Retire a compromised signing key at once',
    responses: { 200: c.RevokedKey },
    errors: [400, 404],
  },
];
