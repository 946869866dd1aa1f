/**
 * The IPsec shares' listeners of one tunnel, run inside the tunnel's namespace (`ip netns exec <ns> node --import
 * tsx edge/ipsec/relay.ts <edge socket>`): Node cannot open a socket in another namespace itself, so this small
 * process does, and hands each accepted connection to the edge over a Unix socket (a path, which every namespace
 * sees), the share's id on the first line; the edge carries it through an agent and meters it.
 *
 * Commands on stdin, one JSON object per line: {"op":"listen","shareId","ip","port"} and {"op":"close","shareId"}.
 * Events on stdout, one JSON object per line: {"event":"listening"|"closed"|"failed","shareId","message"?}.
 */
import net from 'node:net';
import readline from 'node:readline';

const edgeSocket = process.argv[2];
const listeners = new Map<string, net.Server>();
const say = (event: Record<string, unknown>) => process.stdout.write(JSON.stringify(event) + '\n');

function close(shareId: string): Promise<void> {
  const server = listeners.get(shareId);
  listeners.delete(shareId);
  if (!server) return Promise.resolve();
  return new Promise((resolve) => server.close(() => resolve()));
}

async function listen(shareId: string, ip: string, port: number): Promise<void> {
  await close(shareId);
  // half-open both ways: a client that has sent all it will still reads the whole answer
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    const edge = net.connect({ path: edgeSocket, allowHalfOpen: true }, () => {
      edge.write(`${shareId}\n`);
      client.pipe(edge);
      edge.pipe(client);
    });
    const teardown = () => {
      client.destroy();
      edge.destroy();
    };
    client.on('error', teardown);
    edge.on('error', teardown);
  });
  listeners.set(shareId, server);
  server.once('error', (err) => {
    listeners.delete(shareId);
    say({ event: 'failed', shareId, message: err.message });
  });
  server.listen(port, ip, () => say({ event: 'listening', shareId }));
}

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  let command: { op?: string; shareId?: string; ip?: string; port?: number };
  try {
    command = JSON.parse(line);
  } catch {
    return;
  }
  if (!command.shareId) return;
  if (command.op === 'listen' && command.ip && command.port) void listen(command.shareId, command.ip, command.port);
  if (command.op === 'close') void close(command.shareId).then(() => say({ event: 'closed', shareId: command.shareId }));
});
// the edge went away: so do its listeners
process.stdin.on('end', () => process.exit(0));
say({ event: 'ready' });
