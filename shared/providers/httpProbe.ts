import http from 'node:http';
import https from 'node:https';
import { EgressDeniedError, egressPolicy } from '../egress.js';

/** What a probe observed (stored as a health check's lastResult). */
export const PROBE_RESULTS = ['SUCCESS', 'FAILURE', 'TIMEOUT', 'ERROR'] as const;
export type ProbeResult = (typeof PROBE_RESULTS)[number];

interface ProbeRequest {
  method: string;
  /** Absolute http(s) URL. */
  url: string;
  timeoutMs: number;
  expectedStatus: number;
}

export interface ProbeOutcome {
  result: ProbeResult;
  /** Observed HTTP status; null when no answer came. */
  status: number | null;
  latencyMs: number;
  /** Why it did not succeed (for FAILURE, TIMEOUT, ERROR). */
  message: string | null;
}

/** Sends one HTTP request to a backend and reports what came back. */
interface HttpProber {
  probe(request: ProbeRequest): Promise<ProbeOutcome>;
}

const elapsed = (started: bigint) => Math.round(Number(process.hrtime.bigint() - started) / 1e6);

/** What a probe that got no answer says, whatever the socket said: a refused port and an open one that is not HTTP
 * must look the same, or health checks become a port scanner. */
const UNREACHABLE = 'unreachable';

/**
 * A real request with node:http(s): the timeout covers connecting and the response head; the body is discarded.
 * Redirects are not followed (a 301 is an observed status like any other). Targets the egress policy denies
 * (HUB_EGRESS_DENY, the service's own endpoints) are an ERROR without any connection attempt. Never throws.
 */
const nodeHttpProber: HttpProber = {
  async probe({ method, url, timeoutMs, expectedStatus }) {
    // the names of the service's own endpoints resolved once, before a literal is judged
    await egressPolicy().ready();
    return new Promise<ProbeOutcome>((resolve) => {
      const started = process.hrtime.bigint();
      let settled = false;
      // declared before finish() can run: an early refusal (bad URL, denied address) clears no timer yet
      let timer: NodeJS.Timeout | undefined;
      const finish = (outcome: Omit<ProbeOutcome, 'latencyMs'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ...outcome, latencyMs: elapsed(started) });
      };
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        finish({ result: 'ERROR', status: null, message: `'${url}' is not a valid URL` });
        return;
      }
      const client = parsed.protocol === 'https:' ? https : parsed.protocol === 'http:' ? http : undefined;
      if (!client) {
        finish({ result: 'ERROR', status: null, message: `only http and https targets can be probed (got ${parsed.protocol})` });
        return;
      }
      const policy = egressPolicy();
      const port = Number(parsed.port) || (parsed.protocol === 'https:' ? 443 : 80);
      try {
        policy.checkTarget(parsed.hostname, port);
      } catch (err) {
        finish({ result: 'ERROR', status: null, message: (err as Error).message });
        return;
      }
      const req = client.request(parsed, {
        method,
        headers: { 'user-agent': 'edgehub-health-check/1', accept: '*/*' },
        agent: false,
        // names are resolved and checked against the egress policy for this port here, and the connection goes to a
        // checked address
        lookup: policy.lookupFor(port) as never,
      });
      timer = setTimeout(() => {
        finish({ result: 'TIMEOUT', status: null, message: `no response within ${timeoutMs} ms` });
        req.destroy();
      }, timeoutMs);
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        res.resume();
        res.on('error', () => undefined);
        finish({
          result: status === expectedStatus ? 'SUCCESS' : 'FAILURE',
          status,
          message: status === expectedStatus ? null : `expected status ${expectedStatus}, got ${status}`,
        });
        req.destroy();
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (err instanceof EgressDeniedError || err.code === 'EGRESS_DENIED') return finish({ result: 'ERROR', status: null, message: err.message });
        finish({ result: 'ERROR', status: null, message: UNREACHABLE });
      });
      req.end();
    });
  },
};

export const httpProber = (): HttpProber => nodeHttpProber;
