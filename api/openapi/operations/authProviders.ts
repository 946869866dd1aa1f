/** Auth providers. */
import * as authProviders from '../../routes/authProviders.js';
import * as c from '../components.js';
import type { Operation } from '../operation.js';

export const authProviderOperations: Operation[] = [
  {
    method: 'post',
    path: '/auth-providers',
    scope: 'hub',
    tag: 'Auth providers',
    summary: 'Create an auth provider',
    body: authProviders.createSchema,
    responses: { 201: c.AuthProvider },
  },
  {
    method: 'get',
    path: '/auth-providers',
    scope: 'hub',
    tag: 'Auth providers',
    summary: 'List auth providers',
    paged: true,
    responses: { 200: c.page(c.AuthProvider, 'AuthProvider') },
  },
  { method: 'get', path: '/auth-providers/:id', scope: 'hub', tag: 'Auth providers', summary: 'Get an auth provider', responses: { 200: c.AuthProvider } },
  {
    method: 'patch',
    path: '/auth-providers/:id',
    scope: 'hub',
    tag: 'Auth providers',
    summary: 'Update an auth provider',
    body: authProviders.patchSchema,
    responses: { 200: c.AuthProvider },
  },
  { method: 'delete', path: '/auth-providers/:id', scope: 'hub', tag: 'Auth providers', summary: 'Delete an auth provider', responses: { 204: null } },
];
