/**
 * Raw sockets for testing a proxy by the exact bytes: a client that writes bytes and reads what comes back, a target
 * that writes exact answers, and a recording target (node:http) that keeps every request it parsed.
 */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';

/** Writes `bytes` to 127.0.0.1:port and reads until the connection closes or `done(text)` says enough. */
export async function rawExchange(
  port: number,
  bytes: string | Buffer,
  options: { done?: (text: string) => boolean; timeoutMs?: number } = {},
): Promise<string> {
  return (await rawConversation(port, bytes, options)).text;
}

/** As rawExchange, and whether the peer closed the connection (rather than `done` or the timeout ending it). */
export function rawConversation(
  port: number,
  bytes: string | Buffer,
  options: { done?: (text: string) => boolean; timeoutMs?: number } = {},
): Promise<{ text: string; closedByPeer: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    let settled = false;
    const finish = (closedByPeer: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closedByPeer });
    };
    const timer = setTimeout(() => finish(false), options.timeoutMs ?? 5000);
    socket.on('data', (d) => {
      text += d.toString('latin1');
      if (options.done?.(text)) finish(false);
    });
    socket.on('error', () => finish(true));
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.write(bytes);
  });
}

/** Whether `text` holds `n` complete answers framed by Content-Length (the edge's own answers always are). */
export function answersComplete(text: string, n: number): boolean {
  let rest = text;
  for (let i = 0; i < n; i++) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) return false;
    const head = rest.slice(0, end);
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    if (!length) return false;
    const total = end + 4 + Number(length[1]);
    if (rest.length < total) return false;
    rest = rest.slice(total);
  }
  return true;
}

export interface Recorded {
  method: string;
  url: string;
  rawHeaders: string[];
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface Recorder {
  url: string;
  port: number;
  requests: Recorded[];
  /** Every byte the target received, by connection. */
  bytes: string[];
  close(): Promise<void>;
}

/** A node:http target that records each request it parsed (and every byte it received) and answers 200 `ok`. */
export async function recordingTarget(answer?: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void): Promise<Recorder> {
  const requests: Recorded[] = [];
  const bytes: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('latin1');
      requests.push({ method: req.method ?? '', url: req.url ?? '', rawHeaders: req.rawHeaders, headers: req.headers, body });
      if (answer) return answer(req, res, body);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  server.on('connection', (socket) => {
    const index = bytes.push('') - 1;
    socket.on('data', (d: Buffer) => (bytes[index] += d.toString('latin1')));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    bytes,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A raw TCP target: `answer(request head, index of the request on its connection, socket)` writes whatever it likes.
 * Request bodies are not expected (the head ends the request).
 */
export async function rawTarget(answer: (head: string, index: number, socket: net.Socket) => void) {
  let connections = 0;
  let closed = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => {
      closed++;
      sockets.delete(socket);
    });
    let buffered = '';
    let index = 0;
    socket.on('data', (d) => {
      buffered += d.toString('latin1');
      for (let end = buffered.indexOf('\r\n\r\n'); end >= 0; end = buffered.indexOf('\r\n\r\n')) {
        const head = buffered.slice(0, end);
        buffered = buffered.slice(end + 4);
        answer(head, index++, socket);
      }
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    /** Connections the target has seen close. */
    closed: () => closed,
    open: () => sockets.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
