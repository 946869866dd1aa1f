/** Metrics. */
import { z } from 'zod';
import * as c from '../components.js';
import type { Operation } from '../operation.js';

export const metricsQuery = z.object({
  duration: z.string().optional().meta({ description: 'ISO 8601 duration of the window ending now, e.g. PT1H (default), P1D' }),
  range: z.string().optional().meta({ description: 'alias of duration' }),
  step: z.string().optional().meta({ description: 'ISO 8601 bucket size; chosen from the window when absent' }),
});

export const metricsOperations: Operation[] = [
  { method: 'get', path: '/metrics', scope: 'hub', tag: 'Metrics', summary: 'Traffic of the hub', query: metricsQuery, responses: { 200: c.MetricSeries } },
  {
    method: 'get',
    path: ['/metrics/sparklines', '/sparklines'],
    scope: 'hub',
    tag: 'Metrics',
    summary: 'A sparkline per share over the last day',
    responses: { 200: c.Sparklines },
  },
  {
    method: 'get',
    path: '/shares/:shareId/metrics',
    scope: 'hub',
    tag: 'Metrics',
    summary: 'Traffic of a share',
    query: metricsQuery,
    responses: { 200: c.MetricSeries },
  },
  {
    method: 'get',
    path: '/environments/:envZId/metrics',
    scope: 'hub',
    tag: 'Metrics',
    summary: 'Traffic of an environment',
    query: metricsQuery,
    responses: { 200: c.MetricSeries },
  },
  {
    method: 'get',
    path: '/hub/shares/:shareId/metrics',
    scope: 'account',
    tag: 'Metrics',
    summary: "Traffic of a share of the API key's hub",
    query: metricsQuery,
    responses: { 200: c.MetricSeries },
  },
  {
    method: 'get',
    path: '/hub/environments/:envZId/metrics',
    scope: 'account',
    tag: 'Metrics',
    summary: "Traffic of an environment of the API key's hub",
    query: metricsQuery,
    responses: { 200: c.MetricSeries },
  },
];
