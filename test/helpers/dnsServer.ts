/**
 * A small authoritative DNS server on loopback (UDP) whose records a test changes while the service resolves
 * against it (HUB_DNS_SERVERS=127.0.0.1:<port>). Answers carry TTL 0 so that nothing caches a stale answer.
 */
import dns2 from 'dns2';

const { Packet } = dns2;
const NXDOMAIN = 3;

export interface TestDnsServer {
  /** `127.0.0.1:<port>`, the HUB_DNS_SERVERS value. */
  server: string;
  setA(name: string, addresses: string[]): void;
  setCname(name: string, target: string): void;
  remove(name: string): void;
  /** Names asked for, in order (lower case). */
  queries: string[];
  close(): Promise<void>;
}

type Zone = Map<string, { a?: string[]; cname?: string }>;

const key = (name: string) => name.toLowerCase().replace(/\.$/, '');

export async function startDnsServer(): Promise<TestDnsServer> {
  const zone: Zone = new Map();
  const queries: string[] = [];
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      const name = key(question.name);
      queries.push(name);
      const entry = zone.get(name);
      if (!entry) {
        response.header.rcode = NXDOMAIN;
        void send(response);
        return;
      }
      if (entry.cname && (question.type === Packet.TYPE.CNAME || question.type === Packet.TYPE.A)) {
        response.answers.push({ name: question.name, type: Packet.TYPE.CNAME, class: Packet.CLASS.IN, ttl: 0, domain: entry.cname } as never);
      } else if (question.type === Packet.TYPE.A) {
        for (const address of entry.a ?? []) {
          response.answers.push({ name: question.name, type: Packet.TYPE.A, class: Packet.CLASS.IN, ttl: 0, address } as never);
        }
      }
      void send(response);
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
    queries,
    close: () => server.close(),
  };
}
