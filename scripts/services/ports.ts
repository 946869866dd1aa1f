/** Free and taken ports on this machine. */
import net from 'node:net';

const askKernel = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });

/** Ports this process was already given: the kernel may offer a port again as soon as the probe above closed it. */
const given = new Set<number>();

/**
 * A port nothing listens on now, and one this process was not given before: two calls in a row (a share's port and
 * its neighbour's, before either listens) never return the same one.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const port = await askKernel();
    if (!given.has(port) || attempt >= 20) {
      given.add(port);
      return port;
    }
  }
}

const canListen = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

/** Whether a program already listens on `port` (on any interface: what a server of ours would bind). */
export const portTaken = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'EADDRINUSE' || err.code === 'EACCES'));
    server.listen(port, () => server.close(() => resolve(false)));
  });

/**
 * The first of `count` consecutive ports that are free now (for a process that takes base + index for each of its
 * workers): a free port's neighbours may be taken, e.g. as the local end of an open connection.
 */
export async function freePortRange(count: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = await freePort();
    if (base + count > 65535) continue;
    let free = true;
    for (let i = 1; i < count && free; i++) free = await canListen(base + i);
    if (free) return base;
  }
  throw new Error(`no ${count} consecutive free ports found`);
}
