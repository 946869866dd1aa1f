/** IPsec: locations, tunnels and their metrics. */
import { z } from 'zod';
import * as ipsec from '../../routes/ipsec.js';
import * as c from '../components.js';
import type { Operation } from '../operation.js';
import { metricsQuery } from './metrics.js';

const tunnelMetricsQuery = z.object({ window: z.enum(['30m', '1h', '1d', '7d']).optional().meta({ description: 'default 1h' }) });
const ipsecListQuery = z.object({
  status: z.string().optional(),
  name: z.string().optional(),
  locationId: z.string().optional(),
});
const location = { 202: { Location: 'the execution: /hub/{hubId}/executions/{id}' } };

export const ipsecOperations: Operation[] = [
  {
    method: 'post',
    path: '/ipsec-tunnels',
    scope: 'hub',
    tag: 'IPsec',
    summary: 'Create an IPsec tunnel (provisioned asynchronously)',
    body: ipsec.createTunnelSchema,
    responses: { 202: c.IpsecTunnel },
    headers: location,
  },
  {
    method: 'get',
    path: '/ipsec-tunnels',
    scope: 'hub',
    tag: 'IPsec',
    summary: 'List IPsec tunnels',
    paged: true,
    query: ipsecListQuery,
    responses: { 200: c.page(c.IpsecTunnel, 'IpsecTunnel') },
  },
  { method: 'get', path: '/ipsec-tunnels/:id', scope: 'hub', tag: 'IPsec', summary: 'Get an IPsec tunnel', responses: { 200: c.IpsecTunnel } },
  {
    method: 'delete',
    path: '/ipsec-tunnels/:id',
    scope: 'hub',
    tag: 'IPsec',
    summary: 'Delete an IPsec tunnel (torn down asynchronously)',
    responses: { 202: c.IpsecTunnel },
    headers: location,
  },
  {
    method: 'get',
    path: '/ipsec-tunnels/:id/tunnel-config',
    scope: 'hub',
    tag: 'IPsec',
    summary: 'Tunnel configuration and state',
    responses: { 200: c.TunnelConfig },
  },
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
  {
    method: 'get',
    path: '/ipsec-tunnels/:id/metrics',
    scope: 'hub',
    tag: 'IPsec',
    summary: 'Traffic of the tunnel (sum of its shares)',
    query: tunnelMetricsQuery,
    responses: { 200: c.MetricSeries },
  },
  {
    method: 'post',
    path: '/ipsec-shares',
    scope: 'hub',
    tag: 'IPsec',
    summary: 'Create an IPsec share',
    body: ipsec.fullShareSchema,
    responses: { 202: c.IpsecShare },
    headers: location,
  },
  {
    method: 'get',
    path: '/ipsec-shares',
    scope: 'hub',
    tag: 'IPsec',
    summary: 'List IPsec shares',
    paged: true,
    query: ipsecListQuery,
    responses: { 200: c.page(c.IpsecShare, 'IpsecShare') },
  },
  { method: 'get', path: '/ipsec-shares/:id', scope: 'hub', tag: 'IPsec', summary: 'Get an IPsec share', responses: { 200: c.IpsecShare } },
  {
    method: 'put',
    path: '/ipsec-shares/:id',
    scope: 'hub',
    tag: 'IPsec',
    summary: 'Replace an IPsec share',
    body: ipsec.fullShareSchema,
    responses: { 202: c.IpsecShare },
    headers: location,
  },
  {
    method: 'patch',
    path: '/ipsec-shares/:id',
    scope: 'hub',
    tag: 'IPsec',
    summary: 'Update an IPsec share',
    body: ipsec.partialShareSchema,
    responses: { 202: c.IpsecShare },
    headers: location,
  },
  {
    method: 'delete',
    path: '/ipsec-shares/:id',
    scope: 'hub',
    tag: 'IPsec',
    summary: 'Delete an IPsec share',
    responses: { 202: c.IpsecShare },
    headers: location,
  },
  {
    method: 'get',
    path: '/ipsec-shares/:id/metrics',
    scope: 'hub',
    tag: 'IPsec',
    summary: 'Traffic of an IPsec share',
    query: metricsQuery,
    responses: { 200: c.MetricSeries },
  },
];
