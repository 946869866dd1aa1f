/**
 * A real HTTP backend on loopback for health-check tests: `/status/<code>` answers that status, `/slow/<ms>`
 * answers 200 after that long, anything else 200. Every request is recorded.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  url: string;
  at: number;
}

export interface HttpTarget {
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export async function startHttpTarget(): Promise<HttpTarget> {
  const requests: RecordedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const server = http.createServer((req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', at: Date.now() });
    const status = /^\/status\/(\d{3})/.exec(req.url ?? '');
    const slow = /^\/slow\/(\d+)/.exec(req.url ?? '');
    if (slow) {
      const timer = setTimeout(() => {
        timers.delete(timer);
        res.end('late');
      }, Number(slow[1]));
      timers.add(timer);
      res.on('close', () => clearTimeout(timer));
      return;
    }
    res.statusCode = status ? Number(status[1]) : 200;
    res.end(req.method === 'HEAD' ? undefined : 'ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
