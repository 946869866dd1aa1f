/**
 * `npm run dev:dns`: a small DNS server for trying custom frontends on one machine. It answers A and CNAME questions
 * from the record files in a folder (default `$HUB_DATA_DIR/dns`, i.e. `.data/dns`): each `*.json` file is what
 * `GET H/custom-frontends/{id}/dns-records` returned, so saving that answer there "publishes" the records, and
 * removing the file withdraws them. Files are read again for every question; answers carry TTL 0. Everything else
 * is NXDOMAIN. Start the service with `HUB_DNS_SERVERS=127.0.0.1:1053` (the default listen address) so that its
 * custom-frontend DNS check asks this server.
 *
 *   npm run dev:dns [-- --listen 127.0.0.1:1053] [--dir .data/dns]
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import dns2 from 'dns2';
import { setting } from '../shared/settings.js';

const { Packet } = dns2;
const NXDOMAIN = 3;

const DEV_DNS_LISTEN = '127.0.0.1:1053';

interface Entry {
  a?: string[];
  cname?: string;
}

const key = (name: string) => name.toLowerCase().replace(/\.$/, '');

/** The records of every readable `*.json` file in `dir` (files that are not DNS-records answers are skipped). */
function readRecords(dir: string): Map<string, Entry> {
  const zone = new Map<string, Entry>();
  let files: string[] = [];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  } catch {
    return zone;
  }
  for (const file of files.sort()) {
    let records: { aRecord?: { name?: unknown; ipAddress?: unknown }; cnameRecords?: Array<{ name?: unknown; value?: unknown }> };
    try {
      records = JSON.parse(readFileSync(path.join(dir, file), 'utf8'));
    } catch {
      continue; // half-written or not JSON: skip it this time
    }
    const a = records?.aRecord;
    if (a && typeof a.name === 'string' && Array.isArray(a.ipAddress)) {
      zone.set(key(a.name), { a: a.ipAddress.filter((ip): ip is string => typeof ip === 'string') });
    }
    for (const c of Array.isArray(records?.cnameRecords) ? records.cnameRecords : []) {
      if (typeof c?.name === 'string' && typeof c.value === 'string') zone.set(key(c.name), { cname: key(c.value) });
    }
  }
  return zone;
}

export interface DevDns {
  /** `host:port`, the HUB_DNS_SERVERS value. */
  server: string;
  close(): Promise<void>;
}

export async function startDevDns(options: { dir: string; listen?: string }): Promise<DevDns> {
  const [host, portText] = (options.listen ?? DEV_DNS_LISTEN).split(/:(?=\d+$)/);
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      const entry = question ? readRecords(options.dir).get(key(question.name)) : undefined;
      if (!entry) {
        response.header.rcode = NXDOMAIN;
      } else if (entry.cname && (question.type === Packet.TYPE.CNAME || question.type === Packet.TYPE.A)) {
        response.answers.push({ name: question.name, type: Packet.TYPE.CNAME, class: Packet.CLASS.IN, ttl: 0, domain: entry.cname } as never);
      } else if (entry.a && question.type === Packet.TYPE.A) {
        for (const address of entry.a) {
          response.answers.push({ name: question.name, type: Packet.TYPE.A, class: Packet.CLASS.IN, ttl: 0, address } as never);
        }
      }
      send(response);
    },
  });
  server.on('requestError', () => undefined);
  const addresses = await server.listen({ udp: { port: Number(portText), address: host } });
  const port = (addresses as unknown as { udp: { port: number } }).udp.port;
  return { server: `${host}:${port}`, close: () => server.close() };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  const dir = path.resolve(arg('--dir') ?? path.join(setting('HUB_DATA_DIR'), 'dns'));
  const listen = arg('--listen') ?? setting('DEV_DNS_LISTEN');
  mkdirSync(dir, { recursive: true });
  try {
    const dns = await startDevDns({ dir, listen });
    console.log(`dev DNS answering on ${dns.server} (UDP) from ${dir}/*.json`);
    console.log(`start the service with: HUB_DNS_SERVERS=${dns.server} npm start`);
    const stop = () => void dns.close().then(() => process.exit(0));
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  } catch (err) {
    console.error(`dev-dns: cannot listen on ${listen}: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}
