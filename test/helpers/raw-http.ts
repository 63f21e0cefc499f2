import { connect } from 'node:net';
import type { Answer } from './http.ts';

/** An answer read off the wire; `status` 0 means the server closed without answering. */
export interface RawAnswer extends Answer {
  /** The answer's head and body as received, for failure messages. */
  wire: string;
}

/**
 * Sends bytes exactly as given on a fresh connection and parses the final answer (interim 1xx
 * answers are skipped) with its headers, read until the server closes (send `Connection: close`).
 * Write errors are ignored: a server may answer and close before a large body is all sent.
 */
export function sendRaw(base: string, bytes: Buffer, timeoutMs = 15_000): Promise<RawAnswer> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    // The client does not half-close: Node's server (httpAllowHalfOpen false) drops the answer to a
    // request whose client has ended its side before the answer was ready.
    const socket = connect(Number(port), hostname, () => socket.write(bytes));
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    const chunks: Buffer[] = [];
    let failed: Error | undefined;
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      // A reset after the answer arrived (the server stopped reading a refused body) is normal.
      if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') failed = error;
    });
    socket.on('close', () => {
      if (failed !== undefined && chunks.length === 0) return reject(failed);
      resolve(parseRawAnswer(Buffer.concat(chunks)));
    });
  });
}

/** An answer's bytes as read off the wire, parsed (a chunked body is joined; an unfinished one is cut at its last whole chunk). */
export function parseRawAnswer(all: Buffer): RawAnswer {
  let rest = all;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end === -1) return empty(all);
    const head = rest.subarray(0, end).toString('latin1');
    const lines = head.split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1] ?? 0);
    if (status === 0) return empty(all);
    let body = rest.subarray(end + 4);
    if (status >= 100 && status < 200) {
      rest = body;
      continue;
    }
    const headers = new Headers();
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
    }
    if (/chunked/i.test(headers.get('transfer-encoding') ?? '')) body = unchunk(body);
    else if (headers.has('content-length')) body = body.subarray(0, Number(headers.get('content-length')));
    const text = body.toString('utf8');
    const type = headers.get('content-type') ?? '';
    let json: unknown;
    if (type.includes('json') && text !== '') {
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined; // the checks report a JSON type whose body does not parse
      }
    }
    return { status, headers, text, json, wire: all.subarray(0, 4000).toString('latin1') };
  }
}

function empty(all: Buffer): RawAnswer {
  return { status: 0, headers: new Headers(), text: '', json: undefined, wire: all.toString('latin1') };
}

function unchunk(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  while (at < body.length) {
    const lineEnd = body.indexOf('\r\n', at);
    if (lineEnd === -1) break;
    const size = Number.parseInt(body.subarray(at, lineEnd).toString('latin1'), 16);
    if (!(size > 0)) break;
    parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}
