/**
 * A small DNS server on loopback (UDP) standing in for the public DNS: a test changes its records while the service
 * resolves against it (HUB_DNS_SERVERS=127.0.0.1:<port>). Zones can be forwarded to another server (as a
 * delegation would), and TXT questions follow CNAMEs like a recursive resolver. Answers carry TTL 0.
 */
import dns2 from 'dns2';
import { waitFor, type HubFixture } from './stack.js';

const { Packet } = dns2;
const NXDOMAIN = 3;

export interface TestDnsServer {
  /** `127.0.0.1:<port>`, the HUB_DNS_SERVERS value. */
  server: string;
  setA(name: string, addresses: string[]): void;
  setCname(name: string, target: string): void;
  remove(name: string): void;
  /** Answers for names in `zone` come from `server` (`host:port`). */
  forward(zone: string, server: string): void;
  /** Names asked for, in order (lower case). */
  queries: string[];
  close(): Promise<void>;
}

type Zone = Map<string, { a?: string[]; cname?: string }>;
type Answer = Record<string, unknown>;

const key = (name: string) => name.toLowerCase().replace(/\.$/, '');

export async function startDnsServer(): Promise<TestDnsServer> {
  const zone: Zone = new Map();
  const forwards = new Map<string, ReturnType<typeof dns2.UDPClient>>();
  const queries: string[] = [];

  const forwarderOf = (name: string) => [...forwards].find(([z]) => name === z || name.endsWith(`.${z}`))?.[1];

  /** TXT answers for `name`, following CNAMEs (each CNAME is part of the answer), asking forwarded zones upstream. */
  async function txtChain(name: string): Promise<Answer[] | undefined> {
    const answers: Answer[] = [];
    let current = name;
    for (let hop = 0; hop < 8; hop++) {
      const upstream = forwarderOf(current);
      if (upstream) {
        const reply = await upstream(current, 'TXT');
        return [...answers, ...(reply.answers as unknown as Answer[])];
      }
      const entry = zone.get(current);
      if (!entry) return answers.length ? answers : undefined;
      if (!entry.cname) return answers;
      answers.push({ name: current, type: Packet.TYPE.CNAME, class: Packet.CLASS.IN, ttl: 0, domain: entry.cname });
      current = key(entry.cname);
    }
    return answers;
  }

  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      void (async () => {
        const response = Packet.createResponseFromRequest(request);
        const [question] = request.questions;
        const name = key(question.name);
        queries.push(name);
        if (question.type === Packet.TYPE.TXT) {
          const answers = await txtChain(name).catch(() => undefined);
          if (answers === undefined) response.header.rcode = NXDOMAIN;
          else response.answers.push(...(answers as never[]));
          return send(response);
        }
        const entry = zone.get(name);
        if (!entry) {
          response.header.rcode = NXDOMAIN;
          return send(response);
        }
        if (entry.cname && (question.type === Packet.TYPE.CNAME || question.type === Packet.TYPE.A)) {
          response.answers.push({ name: question.name, type: Packet.TYPE.CNAME, class: Packet.CLASS.IN, ttl: 0, domain: entry.cname } as never);
        } else if (question.type === Packet.TYPE.A) {
          for (const address of entry.a ?? []) {
            response.answers.push({ name: question.name, type: Packet.TYPE.A, class: Packet.CLASS.IN, ttl: 0, address } as never);
          }
        }
        return send(response);
      })();
    },
  });
  server.on('requestError', () => undefined);
  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  const port = (addresses as unknown as { udp: { port: number } }).udp.port;
  return {
    server: `127.0.0.1:${port}`,
    setA: (name, a) => zone.set(key(name), { a: [...a] }),
    setCname: (name, target) => zone.set(key(name), { cname: target }),
    remove: (name) => zone.delete(key(name)),
    forward: (z, upstream) => {
      const [host, p] = upstream.split(':');
      forwards.set(key(z), dns2.UDPClient({ dns: host, port: Number(p), timeout: 2000 }));
    },
    queries,
    close: () => server.close(),
  };
}

/** Waits until a custom frontend's DNS records can be read, then publishes them on `dns` as its owner would. */
export async function publishDnsRecords(dns: TestDnsServer, hub: HubFixture, customFrontendId: string) {
  const records = await waitFor(
    async () => {
      const r = await hub.call('GET', `${hub.h}/custom-frontends/${customFrontendId}/dns-records`);
      return r.status === 200 && r.json;
    },
    { what: 'DNS records' },
  );
  dns.setA(records.aRecord.name, records.aRecord.ipAddress);
  dns.setCname(records.cnameRecords[0].name, records.cnameRecords[0].value);
  return records;
}
