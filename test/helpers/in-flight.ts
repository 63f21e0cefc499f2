import { get } from 'node:http';
import { connect } from 'node:net';

/** How a request that was in flight ended. */
export interface InFlightOutcome {
  /** 0: no status line came back (refused, or closed before answering). */
  status: number;
  /** The whole announced body arrived. */
  complete: boolean;
  body: string;
  contentType: string;
  /** When it ended (Date.now()). */
  endedAt: number;
}

/** A request on its way; `started` settles once it is in flight (or has failed). */
export interface InFlight {
  started: Promise<void>;
  done: Promise<InFlightOutcome>;
}

/**
 * `GET path` on a connection of its own, read slowly: after the first bytes the reader stops for
 * `pauseMs` (the answer backs up into the server), then reads the rest.
 */
export function pausedRead(base: string, path: string, pauseMs: number): InFlight {
  let markStarted: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  const done = new Promise<InFlightOutcome>((resolve) => {
    const outgoing = get(`${base}${path}`, { agent: false }, (incoming) => {
      const chunks: Buffer[] = [];
      incoming.on('data', (chunk: Buffer) => {
        if (chunks.length === 0) {
          markStarted();
          incoming.pause();
          setTimeout(() => incoming.resume(), pauseMs);
        }
        chunks.push(chunk);
      });
      incoming.on('error', () => undefined); // reported as incomplete
      incoming.on('close', () =>
        resolve({
          status: incoming.statusCode ?? 0,
          complete: incoming.complete,
          body: Buffer.concat(chunks).toString(),
          contentType: String(incoming.headers['content-type']),
          endedAt: Date.now(),
        }),
      );
    });
    outgoing.setTimeout(60_000, () => outgoing.destroy(new Error('no answer in 60 s')));
    outgoing.on('error', () => {
      markStarted();
      resolve({ status: 0, complete: false, body: '', contentType: '', endedAt: Date.now() });
    });
  });
  return { started, done };
}

/**
 * `POST /users` with a JSON body of which only the first part is sent now; `finish()` sends the rest.
 * The answer is read raw, so a cut-short body shows as `complete: false`.
 */
export function slowBodyPost(base: string, record: Record<string, string>): InFlight & { finish(): void } {
  const { hostname, port } = new URL(base);
  const body = JSON.stringify(record);
  const half = Math.floor(body.length / 2);
  let markStarted: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  const socket = connect(Number(port), hostname, () => {
    socket.write(
      `POST /users HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body.slice(0, half)}`,
      () => markStarted(),
    );
  });
  const done = new Promise<InFlightOutcome>((resolve) => {
    const chunks: Buffer[] = [];
    socket.setTimeout(60_000, () => socket.destroy());
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => markStarted());
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString();
      const end = text.indexOf('\r\n\r\n');
      const head = end === -1 ? text : text.slice(0, end);
      const rest = end === -1 ? '' : text.slice(end + 4);
      const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? -1);
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0),
        complete: end !== -1 && Buffer.byteLength(rest) === length,
        body: rest,
        contentType: /content-type: ([^\r]*)/i.exec(head)?.[1] ?? '',
        endedAt: Date.now(),
      });
    });
  });
  return { started, done, finish: () => void (socket.writable && socket.write(body.slice(half))) };
}
