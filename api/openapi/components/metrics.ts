/** Metrics: usage series, sparklines, and the usage samples the edges report. */
import { z } from 'zod';
import { id, obj, timestamp } from './base.js';

const UsagePoint = obj({ rx: z.number(), tx: z.number(), timestamp: z.string() });

export const MetricSeries = obj({
  hubId: id,
  scope: z.string(),
  id,
  shareToken: z.string().optional(),
  envZId: z.string().optional(),
  period: z.string().meta({ description: 'the window, ISO 8601', example: 'PT1H' }),
  samples: z.array(UsagePoint),
}).meta({ id: 'MetricSeries' });

export const Sparklines = obj({
  hubId: id,
  sparklines: z.array(obj({ scope: z.string(), id, period: z.string(), samples: z.array(UsagePoint) })),
  pageable: obj({ pageNumber: z.number().int(), pageSize: z.number().int() }),
  totalElements: z.number().int(),
  totalPages: z.number().int(),
  maxPageSize: z.number().int().meta({ description: 'the most shares one response carries (HUB_SPARKLINES_MAX_SHARES); page through the rest' }),
}).meta({ id: 'Sparklines' });

export const UsageAccepted = obj({ accepted: z.number().int() }).meta({ id: 'UsageAccepted' });

export const UsageRequest = obj({
  samples: z.array(
    z.object({
      hubId: id,
      shareId: id.optional(),
      envZId: id.optional(),
      rx: z.number().int().min(0),
      tx: z.number().int().min(0),
      timestamp: timestamp,
    }),
  ),
}).meta({ id: 'UsageRequest', description: 'A bad sample rejects the whole batch.' });
