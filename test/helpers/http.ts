import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON bodies
  json: any;
}

/**
 * Where a request goes: the URL of a server (a process, or an app listening in this process), sent
 * with fetch over a real socket; or an app built in this process, reached through `app.inject`.
 */
export type Target = string | FastifyInstance;

/** One request to a server or an in-process app; the body is read whole and parsed when it is JSON. */
export async function call(
  target: Target,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<Answer> {
  if (typeof target !== 'string') return inject(target, method, path, options);
  const response = await fetch(`${target}${path}`, { method, headers: options.headers, body: options.body }).catch(
    (error: Error) => {
      // fetch says only "fetch failed"; the cause (a reset, a refused connection, a timeout) is what a failure needs.
      const cause = error.cause as NodeJS.ErrnoException | undefined;
      throw new Error(`${method} ${path}: ${error.message}: ${cause?.code ?? ''} ${cause?.message ?? ''}`, { cause });
    },
  );
  const text = await response.text();
  return answer(response.status, response.headers, text);
}

function answer(status: number, headers: Headers, text: string): Answer {
  const type = headers.get('content-type') ?? '';
  // NDJSON is many JSON texts, not one: read it from `text`.
  const json = type.includes('json') && !type.includes('ndjson') && text !== '';
  return { status, headers, text, json: json ? JSON.parse(text) : undefined };
}

/**
 * The request `call` would send with fetch, injected instead. light-my-request reads the URL as fetch
 * does (WHATWG URL: what fetch percent-encodes, it encodes too); the one header fetch adds that the
 * service reads is the content type of a body sent without one, added here the same way.
 */
async function inject(
  app: FastifyInstance,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string | Buffer },
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  const typed = Object.keys(headers).some((name) => name.toLowerCase() === 'content-type');
  if (typeof options.body === 'string' && !typed) headers['content-type'] = 'text/plain;charset=UTF-8';
  const response = await app.inject({
    method,
    url: path,
    headers,
    // A Buffer, so an empty body is still sent as one (Content-Length: 0), as fetch sends it.
    payload: options.body === undefined ? undefined : Buffer.from(options.body),
  });
  const received = new Headers();
  for (const [name, value] of Object.entries(response.headers)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) received.append(name, String(item));
  }
  return answer(response.statusCode, received, response.body);
}

/**
 * Sends bytes exactly as given (for requests fetch would refuse to send) and returns status and body
 * once the server closes the connection. With `keepOpen` the client does not end its side, as a slow
 * client that stalls mid-request would not. A socket silent for `timeoutMs` (15 s) is given up.
 */
export function rawRequest(
  base: string,
  head: Buffer | string,
  options: { keepOpen?: boolean; timeoutMs?: number } = {},
): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base);
  const timeoutMs = options.timeoutMs ?? 15_000;
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => (options.keepOpen ? socket.write(head) : socket.end(head)));
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      resolve({ status, body: text.slice(text.indexOf('\r\n\r\n') + 4) });
    });
  });
}

/** Asserts the RFC 9457 shape and returns the body. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- problem bodies are checked field by field
export function assertProblem(answer: Answer, status: number): any {
  assert.equal(answer.status, status, `expected ${status}, got ${answer.status}: ${answer.text}`);
  assert.match(answer.headers.get('content-type') ?? '', /^application\/problem\+json/);
  const body = answer.json;
  assert.equal(typeof body.type, 'string');
  assert.equal(typeof body.title, 'string');
  assert.equal(body.status, status);
  assert.equal(typeof body.detail, 'string');
  if (body.errors !== undefined) {
    assert.ok(Array.isArray(body.errors) && body.errors.length > 0);
    for (const error of body.errors) {
      assert.deepEqual(Object.keys(error).sort(), ['detail', 'parameter']);
    }
  }
  return body;
}

/** Creates a record through the contract (query string) and returns its id from Location. */
export async function createUser(base: Target, name: string, age: string | number, city: string): Promise<number> {
  const query = new URLSearchParams({ name, age: String(age), city });
  const answer = await call(base, 'POST', `/users?${query}`);
  assert.equal(answer.status, 200, answer.text);
  const location = answer.headers.get('location') ?? '';
  const id = Number(/^\/users\/(\d+)$/.exec(location)?.[1]);
  assert.ok(id > 0, `Location header: ${location}`);
  return id;
}

/** A GET on a connection of its own, so the primary hands each one to the next worker. */
export function getOnNewConnection(base: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const outgoing = request(`${base}${path}`, { agent: false }, (answer) => {
      answer.resume();
      answer.once('end', () => resolve(answer.statusCode ?? 0));
    });
    outgoing.once('error', reject);
    outgoing.end();
  });
}
