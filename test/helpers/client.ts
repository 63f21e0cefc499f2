import { Agent, type IncomingHttpHeaders, request } from 'node:http';

/** A whole answer: its status, headers and every byte of its body. */
export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * A request that got no whole answer. `status` is set when the status line arrived but the body
 * did not finish (a truncated answer); unset when nothing came back (refused, reset, closed).
 */
export class NoAnswer extends Error {
  override name = 'NoAnswer';
  readonly status: number | undefined;

  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
  }
}

/**
 * One client connection: requests go one after another over a single keep-alive socket (opened
 * again if the server closes it), as a browser or SDK client would send them.
 */
export class Connection {
  readonly #agent = new Agent({ keepAlive: true, maxSockets: 1 });
  readonly #base: string;

  constructor(base: string) {
    this.#base = base;
  }

  /** Resolves with the whole answer; rejects with NoAnswer otherwise. Each request gives up after `timeoutMs`. */
  send(
    method: string,
    path: string,
    options: { body?: string; headers?: Record<string, string>; timeoutMs?: number } = {},
  ): Promise<Reply> {
    const { body, headers = {}, timeoutMs = 30_000 } = options;
    return new Promise((resolve, reject) => {
      const outgoing = request(
        `${this.#base}${path}`,
        {
          method,
          agent: this.#agent,
          headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        },
        (incoming) => {
          const status = incoming.statusCode ?? 0;
          const chunks: Buffer[] = [];
          incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
          incoming.on('error', () => undefined); // reported through 'close' below
          incoming.on('close', () => {
            if (incoming.complete) resolve({ status, headers: incoming.headers, body: Buffer.concat(chunks) });
            else reject(new NoAnswer(`${method} ${path}: the ${status} answer was cut short`, status));
          });
        },
      );
      outgoing.setTimeout(timeoutMs, () => outgoing.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      outgoing.on('error', (error) => reject(new NoAnswer(`${method} ${path}: ${error.message}`)));
      outgoing.end(body);
    });
  }

  close(): void {
    this.#agent.destroy();
  }
}
