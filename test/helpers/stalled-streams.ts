import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/**
 * The client side, in Python because Node cannot set a TCP socket's receive buffer (SO_RCVBUF must
 * be set before connecting; Python is on every machine that builds better-sqlite3). Each socket
 * binds its source address, sends the request, reads the answer's head and then reads nothing more,
 * until told `read <i>`: then it reads socket i to its end and prints what came.
 */
const CLIENT = `
import json, socket, sys
host, port, count, rcvbuf, sources, request = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5].split(','), sys.argv[6].encode('latin1')
socks, heads = [], []
for i in range(count):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1400)
    s.bind((sources[i % len(sources)], 0))
    s.connect((host, port))
    s.sendall(request)
    got = b''
    while b'\\r\\n\\r\\n' not in got:
        chunk = s.recv(1024)
        if not chunk:
            break
        got += chunk
    socks.append(s)
    heads.append(got)
print(json.dumps({'statuses': [int(h.split(b' ')[1]) if h.startswith(b'HTTP/1.1 ') else 0 for h in heads]}), flush=True)
for line in sys.stdin:
    i = int(line.split()[1])
    s, data, ended = socks[i], heads[i], False
    s.settimeout(60)
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                ended = True
                break
            data += chunk
    except OSError:
        pass
    print(json.dumps({'text': data.decode('latin1'), 'ended': ended}), flush=True)
`;

export interface StalledStreams {
  /** The status each stream was answered (0: none). */
  statuses: number[];
  /** Starts reading stream `i` and answers all it then gets: the raw answer, and whether the server ended it. */
  read(i: number): Promise<{ wire: string; ended: boolean }>;
  /** Closes every socket (ends the client process). */
  close(): Promise<void>;
}

/**
 * `count` clients of `GET /users/events` (with `headers`) that never read, as on a slow network: each
 * with a receive buffer of `receiveBuffer` bytes, bound to the source addresses in turn (any of
 * 127.0.0.0/8 on Linux), so the service's side holds whatever does not fit.
 */
export async function stalledStreams(
  url: string,
  options: { count: number; sources: readonly string[]; receiveBuffer: number; headers?: Record<string, string> },
): Promise<StalledStreams> {
  const { hostname, port } = new URL(url);
  const extra = Object.entries(options.headers ?? {}).map(([name, value]) => `${name}: ${value}\r\n`);
  const request = `GET /users/events HTTP/1.1\r\nHost: ${hostname}:${port}\r\n${extra.join('')}\r\n`;
  const child = spawn(
    'python3',
    [
      '-c',
      CLIENT,
      hostname,
      port,
      String(options.count),
      String(options.receiveBuffer),
      options.sources.join(','),
      request,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<Record<string, unknown>> => {
    const line = await lines.next();
    if (line.done === true) throw new Error('the stalled-stream client ended early');
    return JSON.parse(line.value) as Record<string, unknown>;
  };
  const { statuses } = (await next()) as { statuses: number[] };
  return {
    statuses,
    read: async (i) => {
      child.stdin.write(`read ${i}\n`);
      const { text, ended } = (await next()) as { text: string; ended: boolean };
      return { wire: text, ended };
    },
    close: async () => {
      child.stdin.end();
      child.kill();
      await exited;
    },
  };
}
