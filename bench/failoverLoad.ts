/**
 * The steady load of bench:failover and what it saw: API creates and reads, requests to a direct share and to an
 * agent-served share through the edges, and certificate enrollments, each path with a few clients in a loop, every
 * request recorded (when, which path, whether it succeeded). Requests go through a small client-side balancer over
 * the nodes, as a load balancer in front of them would: a node whose connection is refused or reset is left out for
 * 10 s and the request is sent once more to another node; an answer (any status) is never retried.
 */
import http from 'node:http';

export type PathName = 'api' | 'edge direct' | 'edge agent' | 'enroll';
export const PATHS: PathName[] = ['api', 'edge direct', 'edge agent', 'enroll'];

export interface Outcome {
  path: PathName;
  at: number;
  ok: boolean;
}

export interface NodeAddress {
  api: number;
  edge: number;
}

interface Answer {
  status: number;
  json?: any;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function request(port: number, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Answer> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: '127.0.0.1',
        port,
        method,
        path,
        timeout: 15_000,
        headers: { ...headers, ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          let json: unknown;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, json });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(payload);
  });
}

export class Balancer {
  private readonly downUntil = new Map<number, number>();
  private next = 0;

  constructor(private readonly nodes: NodeAddress[]) {}

  /** Sends to a node that is not left out (round robin), and once more to another when the connection fails. */
  async send(which: keyof NodeAddress, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Answer> {
    const order = this.order();
    let last: unknown;
    for (const node of order.slice(0, 2)) {
      try {
        return await request(node[which], method, path, headers, body);
      } catch (err) {
        last = err;
        this.downUntil.set(node[which], Date.now() + 10_000);
      }
    }
    throw last;
  }

  private order(): NodeAddress[] {
    const now = Date.now();
    const up = this.nodes.filter((n) => (this.downUntil.get(n.api) ?? 0) < now && (this.downUntil.get(n.edge) ?? 0) < now);
    const list = up.length ? up : this.nodes;
    const start = this.next++ % list.length;
    return [...list.slice(start), ...list.slice(0, start), ...this.nodes.filter((n) => !list.includes(n))];
  }
}

export interface LoadTargets {
  balancer: Balancer;
  bearer: string;
  hubPath: string;
  directHost: string;
  agentHost: string;
  /** Enrollment JWTs made in advance (one per enrollment) with the common name each asks for, and a CSR maker. */
  jwts: { jwt: string; commonName: string }[];
  csr: (commonName: string) => Promise<string>;
}

export interface Acknowledged {
  id: string;
  at: number;
}

export interface Load {
  outcomes: Outcome[];
  /** envZIds answered 201, and certificate ids answered 201, with when: what must be there afterwards. */
  acknowledged: { environments: Acknowledged[]; certificates: Acknowledged[] };
  stop(): Promise<void>;
}

/** Starts the loops: 2 API clients, 2 on the direct share, 1 on the agent share, 1 enrolling. */
export function startLoad(t: LoadTargets): Load {
  const outcomes: Outcome[] = [];
  const acknowledged = { environments: [] as Acknowledged[], certificates: [] as Acknowledged[] };
  let running = true;
  const record = (path: PathName, ok: boolean) => outcomes.push({ path, at: Date.now(), ok });
  const auth = { authorization: t.bearer, accept: 'application/json' };
  const loop = async (path: PathName, once: () => Promise<boolean>) => {
    while (running) {
      let ok = false;
      try {
        ok = await once();
      } catch {
        ok = false;
      }
      record(path, ok);
      if (!ok) await new Promise((r) => setTimeout(r, 100));
    }
  };
  let n = 0;
  const api = async () => {
    if (n++ % 2 === 0) {
      const r = await t.balancer.send('api', 'POST', `${t.hubPath}/environments`, auth, { description: `failover ${n}` });
      if (r.status === 201) acknowledged.environments.push({ id: r.json.envZId, at: Date.now() });
      return r.status === 201;
    }
    return (await t.balancer.send('api', 'GET', `${t.hubPath}/environments?size=5`, auth)).status === 200;
  };
  const edge = (host: string) => async () => (await t.balancer.send('edge', 'GET', '/', { host })).status === 200;
  const enroll = async () => {
    const next = t.jwts.pop();
    if (!next) {
      await new Promise((r) => setTimeout(r, 200));
      return true;
    }
    const r = await t.balancer.send(
      'api',
      'POST',
      `${t.hubPath.replace('/hub/', '/hub/v2/')}/client-certificates/enroll`,
      { accept: 'application/json' },
      { jwt: next.jwt, csr: await t.csr(next.commonName) },
    );
    if (r.status === 201) acknowledged.certificates.push({ id: r.json.id, at: Date.now() });
    // answered 503 (a store away): the token was not spent, it is tried again; any other refusal spends it
    else if (r.status === 503) t.jwts.push(next);
    return r.status === 201;
  };
  const loops = [
    loop('api', api),
    loop('api', api),
    loop('edge direct', edge(t.directHost)),
    loop('edge direct', edge(t.directHost)),
    loop('edge agent', edge(t.agentHost)),
    loop('enroll', enroll),
  ];
  return {
    outcomes,
    acknowledged,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}
