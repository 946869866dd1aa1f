/**
 * A hub with one real resource of each kind, for sweeps over every operation of the API (the OpenAPI document's
 * list): each operation's concrete path with its parameters naming those resources (or an odd string), a valid base
 * body for each create, the credentials its scope takes, and the operations in an order that deletes last.
 */
import type { Operation } from '../../api/openapi/operation.js';
import { operations } from '../../api/openapi/operations.js';
import { publicFrontendId } from './edge.js';
import { makeCsr } from './pki.js';
import { type HubFixture, type Stack, waitFor } from './stack.js';

export interface Sweep {
  hub: HubFixture;
  /** A real resource per path parameter, by the collection it follows (and `tokenString`). */
  ids: Record<string, string>;
  /** A valid body of the operation when it creates something (so that the handler runs), else `{}`. */
  baseOf(op: Operation): Record<string, unknown>;
  /** The request path of an operation: each parameter a real id (by the collection before it) or `odd`. */
  pathOf(op: Operation, odd?: string): string;
  /** The Authorization its scope takes. */
  authOf(op: Operation): string | undefined;
  /** Every operation, deletions last (so that the others meet existing resources), the operator's very last. */
  ordered(): Operation[];
}

const keyOf = (op: Operation) => `${op.method.toUpperCase()} ${Array.isArray(op.path) ? op.path[0] : op.path}`;

/** Makes the hub and its resources (an IPsec tunnel DEPLOYED among them: the stack's workers must run). */
export async function sweepFixture(stack: Stack): Promise<Sweep> {
  const hub = await stack.hub({ ipsec: true });
  const ids: Record<string, string> = {};
  const BASES: Record<string, Record<string, unknown>> = {};
  const must = async (r: Promise<{ status: number; json: any; text: string }>, what: string) => {
    const answer = await r;
    if (answer.status >= 300) throw new Error(`${what}: ${answer.status} ${answer.text}`);
    return answer.json;
  };
  const env = await must(hub.call('POST', `${hub.h}/environments`, { body: { description: 'fuzz' } }), 'environment');
  ids.environments = env.envZId;
  const share = await must(
    hub.call('POST', `${hub.h}/shares`, { body: { name: 'fuzz', frontendIds: [await publicFrontendId(hub)], target: 'http://127.0.0.1:9' } }),
    'share',
  );
  ids.shares = share.zId;
  const token = await must(hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name: 'fuzz' } }), 'token');
  ids['certificate-request-tokens'] = token.id;
  ids.tokenString = token.token;
  const check = await must(
    hub.call('POST', `${hub.h}/health-checks`, { body: { name: 'fuzz', method: 'GET', path: '/', expectedStatus: 200, target: 'http://127.0.0.1:9' } }),
    'health check',
  );
  ids['health-checks'] = check.id;
  const tunnel = await must(
    hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: { name: 'fuzz', peerPublicIp: '203.0.113.90', peerCidr: '10.90.0.0/16' } }),
    'tunnel',
  );
  ids['ipsec-tunnels'] = tunnel.id;
  await waitFor(async () => (await hub.call('GET', `${hub.h2}/ipsec-tunnels/${tunnel.id}`)).json.status === 'DEPLOYED', { what: 'tunnel DEPLOYED' });
  const ipsecShare = await must(
    hub.call('POST', `${hub.h2}/ipsec-shares`, {
      body: { name: 'fuzz', ipsecTunnelId: tunnel.id, envZId: env.envZId, target: 'db.internal:5432', ingressPort: 5432 },
    }),
    'ipsec share',
  );
  ids['ipsec-shares'] = ipsecShare.id;
  const cert = await must(
    hub.call('POST', `${hub.h}/client-certificates`, { body: { value: await makeCsr('/CN=fuzz'), name: 'fuzz-cert' } }),
    'client certificate',
  );
  ids['client-certificates'] = cert.id;
  ids['api-keys'] = hub.keyId;
  const jwt = await must(hub.call('GET', `${hub.h2}/certificate-request-tokens/${token.id}/enrollment-jwt`), 'enrollment JWT');
  const frontendId = await publicFrontendId(hub);
  const csr = await makeCsr('/CN=fuzz-base');
  // a valid body per create, so that one hostile field at a time meets the handler and not only the schema
  Object.assign(BASES, {
    'POST /admin/v1/hubs': { name: 'fuzz-hub' },
    'POST /admin/v1/hubs/:hubId/api-keys': { name: 'fuzz-key' },
    'POST /admin/v1/frontends': { publicName: 'fuzz-frontend', urlTemplate: 'https://{token}.fuzz.example' },
    'POST /environments': { description: 'fuzz' },
    'POST /shares': { name: 'fuzz-2', frontendIds: [frontendId], target: 'http://127.0.0.1:9' },
    'POST /certificate-request-tokens': { name: 'fuzz-2', commonName: 'fuzz', validYears: 1 },
    'POST /health-checks': { name: 'fuzz-2', method: 'GET', path: '/', expectedStatus: 200, target: 'http://127.0.0.1:9', intervalSeconds: 0 },
    'POST /ipsec-tunnels': { name: 'fuzz-2', peerPublicIp: '203.0.113.91', peerCidr: '10.91.0.0/16' },
    'POST /ipsec-shares': { name: 'fuzz-2', ipsecTunnelId: ids['ipsec-tunnels'], envZId: ids.environments, target: 'db.internal:5433', ingressPort: 5433 },
    'POST /client-certificates': { value: csr, name: 'fuzz-cert-2' },
    'POST /custom-frontends': { hostname: 'fuzz.example.com' },
    'POST /auth-providers': {
      name: 'fuzz',
      type: 'OIDC',
      config: { clientId: 'c', clientSecret: 's', issuerUrl: 'http://127.0.0.1:9', scopes: ['openid'] },
      emailPatterns: ['*@example.com'],
    },
    'POST /hub/v2/:hubId/client-certificates/enroll': { jwt: jwt.jwt, csr },
  });
  for (const key of Object.keys(BASES)) if (!operations.some((op) => keyOf(op) === key)) throw new Error(`base body for ${key}, which is no operation`);

  /** The concrete path of an operation: each parameter a real id (by the collection before it) or `odd`. */
  const pathOf = (op: Operation, odd?: string): string => {
    const raw = Array.isArray(op.path) ? op.path[0] : op.path;
    const parts = raw.replace(/\\:/g, '\u0001').split('/');
    const concrete = parts
      .map((part, i) =>
        part.replace(/:([A-Za-z]+)/g, (_m, name: string) => {
          if (name === 'hubId') return hub.hubId;
          if (odd !== undefined) return encodeURIComponent(odd);
          if (name === 'token') return ids.tokenString;
          if (name === 'envZId') return ids.environments;
          if (name === 'shareId' || name === 'zId') return ids.shares;
          return ids[parts[i - 1]] ?? 'no-such-id';
        }),
      )
      .join('/')
      .replace(/\u0001/g, ':');
    return op.scope === 'hub' ? `${hub.h2}${concrete}` : concrete;
  };

  return {
    hub,
    ids,
    baseOf: (op) => BASES[keyOf(op)] ?? {},
    pathOf,
    authOf: (op) => (op.scope === 'admin' ? stack.admin : op.scope === 'open' ? undefined : hub.bearer),
    // the hub's own deletions before the operator's (a deleted API key or hub would answer the rest 401)
    ordered: () => [
      ...operations.filter((o) => o.method !== 'delete'),
      ...operations.filter((o) => o.method === 'delete' && o.scope !== 'admin'),
      ...operations.filter((o) => o.method === 'delete' && o.scope === 'admin'),
    ],
  };
}
