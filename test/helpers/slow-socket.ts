import { connect } from 'node:net';

/** How a slow or idle client behaves. */
export type SlowKind =
  /** Connects and sends nothing. */
  | 'silent'
  /** Sends a request line, then header bytes one at a time, never finishing the headers. */
  | 'slow-headers'
  /** Sends whole headers announcing a body, then the body one byte at a time. */
  | 'slow-body'
  /** Sends one whole request, reads the answer, then stays idle on the kept-alive connection. */
  | 'idle-keep-alive';

export const SLOW_KINDS: readonly SlowKind[] = ['silent', 'slow-headers', 'slow-body', 'idle-keep-alive'];

/** What happened to one slow socket. */
export interface SlowOutcome {
  kind: SlowKind;
  /**
   * ms from the close back to a moment no later than the one the server's timeout starts its clock:
   * just before connecting (the server's clock starts once it has the connection), or for
   * idle-keep-alive just before sending its request (the server's starts once the answer is sent).
   * Never shorter than the time the server really gave it, however late this process runs.
   */
  lived: number;
  /** The server closed it (end or reset); false when the client gave up after `giveUpMs`. */
  closedByServer: boolean;
  /** The status of the first answer (0: none), and of a second one after it (0: none). */
  status: number;
  laterStatus: number;
  /** The answers' bytes, for messages. */
  received: string;
}

/**
 * Opens one socket to 127.0.0.1:`port` that behaves as `kind`, every `trickleMs` sending one more
 * byte where the kind trickles, until the server closes it or `giveUpMs` pass (then it is destroyed).
 * `path` is the request target (it may carry a query string of values that must not be logged).
 */
export function slowSocket(port: number, kind: SlowKind, path: string, trickleMs: number, giveUpMs: number) {
  return new Promise<SlowOutcome>((resolve) => {
    let received = '';
    let gaveUp = false;
    let trickle: NodeJS.Timeout | undefined;
    let clockStart = Date.now();
    const socket = connect(port, '127.0.0.1', () => {
      const drip = (bytes: string) => {
        let at = 0;
        trickle = setInterval(() => {
          if (!socket.destroyed && socket.writable) socket.write(bytes[at++ % bytes.length] as string);
        }, trickleMs);
      };
      if (kind === 'slow-headers') {
        socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`);
        drip('X-Padding: slow\r\n');
      } else if (kind === 'slow-body') {
        socket.write(
          `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{"x":"`,
        );
        drip('abcdefgh');
      } else if (kind === 'idle-keep-alive') {
        clockStart = Date.now();
        socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      }
    });
    const giveUp = setTimeout(() => {
      gaveUp = true;
      socket.destroy();
    }, giveUpMs);
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
    });
    socket.on('error', () => undefined); // a reset is a close by the server too
    socket.on('close', () => {
      clearTimeout(giveUp);
      clearInterval(trickle);
      const statuses = [...received.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((match) => Number(match[1]));
      resolve({
        kind,
        lived: Date.now() - clockStart,
        closedByServer: !gaveUp,
        status: statuses[0] ?? 0,
        laterStatus: statuses[1] ?? 0,
        received,
      });
    });
  });
}
