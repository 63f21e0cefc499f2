import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON bodies
  json: any;
}

/** One request to a running server; the body is read whole and parsed when it is JSON. */
export async function call(
  base: string,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  const response = await fetch(`${base}${path}`, { method, headers: options.headers, body: options.body });
  const text = await response.text();
  const type = response.headers.get('content-type') ?? '';
  return {
    status: response.status,
    headers: response.headers,
    text,
    json: type.includes('json') && text !== '' ? JSON.parse(text) : undefined,
  };
}

/**
 * Sends bytes exactly as given (for requests fetch would refuse to send) and returns status and body
 * once the server closes the connection. With `keepOpen` the client does not end its side, as a slow
 * client that stalls mid-request would not.
 */
export function rawRequest(
  base: string,
  head: Buffer | string,
  options: { keepOpen?: boolean } = {},
): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => (options.keepOpen ? socket.write(head) : socket.end(head)));
    socket.setTimeout(15_000, () => socket.destroy(new Error('no answer within 15 s')));
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
export async function createUser(base: string, name: string, age: string | number, city: string): Promise<number> {
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
