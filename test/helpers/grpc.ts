/**
 * A gRPC service for the edge's tests, on @grpc/grpc-js with raw bytes as messages (no .proto needed): unary echo,
 * server streaming of N numbered messages, client streaming (a count of what came), bidi ping-pong, a slow call for
 * deadlines, an error with a message, and an endless stream for cancellation. Run as a process
 * (`node --import tsx test/helpers/grpc.ts <port>`, prints `ready`) it serves on 127.0.0.1:<port> (h2c).
 */
import * as grpc from '@grpc/grpc-js';

const raw = {
  requestSerialize: (b: Buffer) => b,
  requestDeserialize: (b: Buffer) => b,
  responseSerialize: (b: Buffer) => b,
  responseDeserialize: (b: Buffer) => b,
};
const method = (name: string, requestStream: boolean, responseStream: boolean) => ({
  path: `/edgehub.test.Echo/${name}`,
  requestStream,
  responseStream,
  ...raw,
});

export const ECHO = {
  unary: method('Unary', false, false),
  count: method('Count', false, true),
  sum: method('Sum', true, false),
  pingPong: method('PingPong', true, true),
  slow: method('Slow', false, false),
  fail: method('Fail', false, false),
  endless: method('Endless', false, true),
} satisfies grpc.ServiceDefinition;

/** What the server saw of cancellations (tests read it through the `seen` it is given). */
export interface ServerSeen {
  cancelled: string[];
  metadata: Record<string, unknown>[];
}

export function echoImplementation(seen: ServerSeen): grpc.UntypedServiceImplementation {
  return {
    unary: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      seen.metadata.push(call.metadata.getMap());
      const trailer = new grpc.Metadata();
      trailer.set('x-trailer', 'kept');
      callback(null, Buffer.concat([Buffer.from('echo:'), call.request]), trailer);
    },
    count: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      const n = Number(call.request.toString());
      let i = 0;
      const write = () => {
        while (i < n) {
          const ok = call.write(Buffer.from(String(i++)));
          if (!ok) return void call.once('drain', write);
        }
        call.end();
      };
      write();
    },
    sum: (call: grpc.ServerReadableStream<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      let total = 0;
      let messages = 0;
      call.on('data', (b: Buffer) => {
        total += Number(b.toString());
        messages++;
      });
      call.on('end', () => callback(null, Buffer.from(`${messages}:${total}`)));
    },
    pingPong: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on('data', (b: Buffer) => call.write(Buffer.from(`pong:${b.toString()}`)));
      call.on('end', () => call.end());
    },
    slow: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      const timer = setTimeout(() => callback(null, Buffer.from('late')), Number(call.request.toString()));
      call.on('cancelled', () => {
        clearTimeout(timer);
        seen.cancelled.push('slow');
      });
    },
    fail: (_call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      callback({ code: grpc.status.INVALID_ARGUMENT, details: 'the request was refused: bad thing' });
    },
    endless: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      const timer = setInterval(() => call.write(Buffer.from('tick')), 10);
      call.on('cancelled', () => {
        clearInterval(timer);
        seen.cancelled.push('endless');
      });
    },
  };
}

/** A gRPC server on 127.0.0.1 (h2c); its port. */
export async function startGrpcServer(seen: ServerSeen, port = 0): Promise<{ port: number; server: grpc.Server }> {
  const server = new grpc.Server();
  server.addService(ECHO, echoImplementation(seen));
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return { port: bound, server };
}

export const EchoClient = grpc.makeGenericClientConstructor(ECHO, 'Echo');

if (/grpc\.[jt]s$/.test(process.argv[1] ?? '')) {
  const seen: ServerSeen = { cancelled: [], metadata: [] };
  await startGrpcServer(seen, Number(process.argv[2]));
  process.stdout.write('ready\n');
  process.on('SIGTERM', () => process.exit(0));
}
