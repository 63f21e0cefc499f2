import { connect, createServer, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Stops moving bytes either way without closing anything, as a network that hangs. */
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

/** A TCP proxy on 127.0.0.1 to `targetPort`, for faults a real server cannot be made to show. */
export function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let frozen = false;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    if (frozen) socket.pause();
  };
  const server = createServer((client) => {
    track(client);
    const upstream = connect(targetPort, '127.0.0.1');
    track(upstream);
    client.on('data', (chunk) => upstream.write(chunk));
    upstream.on('data', (chunk) => client.write(chunk));
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') return reject(new Error('no proxy port'));
      resolve({
        port: address.port,
        freeze: () => {
          frozen = true;
          for (const socket of sockets) socket.pause();
        },
        thaw: () => {
          frozen = false;
          for (const socket of sockets) socket.resume();
        },
        close: () =>
          new Promise((done) => {
            for (const socket of sockets) socket.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}
