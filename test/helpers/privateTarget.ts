/**
 * A share target for agent tests, run inside a private network (test/helpers/netns.ts) on that namespace's
 * loopback: `node --import tsx test/helpers/privateTarget.ts <name> <httpPort> <tcpPort>`. HTTP: GET /whoami (its
 * name), POST /echo (the body back, streamed), GET /bytes?n=N (N bytes of a known pattern), GET /slow (its name
 * after 300 ms), WebSocket echo on /ws; TCP: an echo server, and on the next port one that speaks first and closes
 * at once (256 KiB of the /bytes pattern, then its end; not when that port is the HTTP one). Prints `ready` once all
 * listen.
 */
import http from 'node:http';
import net from 'node:net';
import { WebSocketServer } from 'ws';

const [name = 'target', httpPort = '8080', tcpPort = '9090'] = process.argv.slice(2);

/** Byte i of the /bytes pattern. */
const pattern = (length: number, offset: number) => {
  const out = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i++) out[i] = (offset + i) % 251;
  return out;
};

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  if (url.pathname === '/whoami') return void res.end(name);
  if (url.pathname === '/headers') return void res.end(JSON.stringify(req.headers));
  if (url.pathname === '/slow') return void setTimeout(() => res.end(name), 300);
  if (url.pathname === '/echo') {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    return void req.pipe(res);
  }
  if (url.pathname === '/bytes') {
    let left = Number(url.searchParams.get('n') ?? '0');
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(left) });
    let offset = 0;
    const write = () => {
      while (left > 0) {
        const n = Math.min(left, 64 * 1024);
        const ok = res.write(pattern(n, offset));
        offset += n;
        left -= n;
        if (!ok) return void res.once('drain', write);
      }
      res.end();
    };
    return write();
  }
  res.writeHead(404).end('no such path');
});
const wss = new WebSocketServer({ server, path: '/ws' });
wss.on('connection', (socket) => socket.on('message', (data) => socket.send(`${name}:${data.toString()}`)));
const tcp = net.createServer((socket) => socket.pipe(socket));
const speaker = net.createServer((socket) => {
  socket.on('error', () => undefined);
  socket.end(pattern(256 * 1024, 0));
});
// the next port, unless the HTTP server has it (a caller's choice of ports near the top of the range)
const speakerPort = Number(tcpPort) + 1;
const ready = () => process.stdout.write('ready\n');
server.listen(Number(httpPort), '127.0.0.1', () =>
  tcp.listen(Number(tcpPort), '127.0.0.1', () =>
    speakerPort === Number(httpPort) || speakerPort > 65535 ? ready() : speaker.listen(speakerPort, '127.0.0.1', ready),
  ),
);
process.on('SIGTERM', () => process.exit(0));
