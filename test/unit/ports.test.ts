import net from 'node:net';
import test from 'ava';
import { freePort } from '../../scripts/services/ports.js';

/**
 * freePort probes a port the kernel picks and closes the probe: the kernel may pick that port again at once. Calls in
 * one process never return a port twice, and each port returned can be listened on.
 */
test('free ports asked for in a row are all different and free', async (t) => {
  const ports: number[] = [];
  for (let i = 0; i < 300; i++) ports.push(await freePort());
  t.is(new Set(ports).size, ports.length);
  const last = ports.at(-1)!;
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(last, '127.0.0.1', resolve));
  await new Promise((r) => server.close(r));
  t.pass();
});
