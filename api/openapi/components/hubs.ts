/** Hubs and their API keys, the signing keys of their JWTs. */
import { z } from 'zod';
import { id, timestamp, nullableTimestamp, obj } from './base.js';

export const Hub = obj({
  id,
  name: z.string(),
  features: obj({ ipsec: z.boolean() }),
  quotas: obj({
    shares: z.number().int().meta({ description: 'shares the hub may hold (TCP ones included): its own, or HUB_MAX_SHARES' }),
    tcpPorts: z.number().int().meta({ description: 'TCP shares (each holds one edge port) the hub may hold: its own, or HUB_MAX_TCP_PORTS' }),
  }),
  createdAt: nullableTimestamp,
}).meta({
  id: 'Hub',
  example: { id: 'hb_1a2b3c', name: 'acme', features: { ipsec: true }, quotas: { shares: 1000, tcpPorts: 20 }, createdAt: '2026-01-01T00:00:00.000Z' },
});

export const ApiKey = obj({
  id,
  hubId: id,
  name: z.string(),
  username: z.string(),
  token: z.string().optional().meta({ description: 'shown once, at creation' }),
  createdAt: nullableTimestamp,
  revokedAt: nullableTimestamp.optional(),
}).meta({ id: 'ApiKey' });

export const Jwks = obj({ keys: z.array(z.record(z.string(), z.unknown())) }).meta({ id: 'Jwks' });

export const RotatedKey = obj({ kid: z.string(), previousKid: z.string() }).meta({ id: 'RotatedKey' });

export const RevokedKey = obj({ kid: z.string(), status: z.literal('REVOKED'), revokedAt: timestamp, activeKid: z.string() }).meta({
  id: 'RevokedKey',
  description: 'The key left the JWKS and its JWTs stop working; a new active key took over when the revoked one was active.',
});
