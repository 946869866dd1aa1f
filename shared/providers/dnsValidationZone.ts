import dns2 from 'dns2';
import { config } from '../config.js';
import { logger } from '../logger.js';
import { normalizeName } from './dns.js';

const { Packet } = dns2;
const NXDOMAIN = 3;
const REFUSED = 5;

/**
 * The validation zone (HUB_VALIDATION_DOMAIN): every custom frontend's `_acme-challenge.<hostname>` is a CNAME
 * into it, so DNS-01 TXT records are published here, never in the owner's zone. The records are kept by the caller
 * (commands/frontendCertificates.ts keeps them in PostgreSQL, so any number of responders, one per worker host with
 * the zone's NS records pointing at them, answer alike). The responder looks names up normalized (normalizeName).
 */
export interface ValidationZone {
  publish(name: string, value: string): Promise<void>;
  withdraw(name: string, value: string): Promise<void>;
  /** The TXT values published at the name (none: NXDOMAIN). */
  lookup(name: string): Promise<string[]>;
}

const inZone = (name: string, zone: string) => name === zone || name.endsWith(`.${zone}`);

/** An authoritative UDP responder for the validation zone: TXT answers from the records, NXDOMAIN otherwise. */
async function startValidationResponder(
  listen: string,
  records: ValidationZone,
  zone = config().validationDomain,
): Promise<{ port: number; close(): Promise<void> }> {
  const separator = listen.lastIndexOf(':');
  const host = listen.slice(0, separator);
  const port = Number(listen.slice(separator + 1));
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      const name = normalizeName(question?.name ?? '');
      void (async () => {
        if (!question || !inZone(name, zone)) {
          response.header.rcode = REFUSED;
          return send(response);
        }
        const values = await records.lookup(name);
        if (!values.length) response.header.rcode = NXDOMAIN;
        else if (question.type === Packet.TYPE.TXT) {
          for (const value of values)
            response.answers.push({ name: question.name, type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 0, data: value } as never);
        }
        return send(response);
      })().catch((err) => logger.warn({ err: (err as Error).message }, 'validation DNS answer failed'));
    },
  });
  server.on('requestError', () => undefined);
  const addresses = await server.listen({ udp: { port, address: host } });
  return { port: (addresses as unknown as { udp: { port: number } }).udp.port, close: () => server.close() };
}

let responder: Promise<{ close(): Promise<void> } | undefined> | undefined;

/**
 * Starts this process's responder on HUB_VALIDATION_DNS_LISTEN once (before the first challenge needs it). Another
 * process on the same host already answering from the same table is as good: EADDRINUSE is not an error.
 */
export function ensureValidationResponder(records: ValidationZone): Promise<unknown> {
  const listen = config().validationDnsListen;
  if (!listen) return Promise.resolve();
  responder ??= startValidationResponder(listen, records).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'EADDRINUSE') return undefined;
    responder = undefined;
    throw err;
  });
  return responder;
}

/** Stops this process's responder, if it started one (shutdown, tests). */
export async function stopValidationResponder(): Promise<void> {
  const running = responder;
  responder = undefined;
  await (await running?.catch(() => undefined))?.close();
}
