import assert from 'node:assert/strict';
import { type IncomingHttpHeaders, request } from 'node:http';
import { describe, it } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { compressible } from '../../src/http/compression.ts';
import { appForSuite } from '../helpers/app.ts';
import { BACKENDS } from '../helpers/backends.ts';
import { sseEvents } from '../helpers/sse.ts';

interface Raw {
  status: number;
  headers: IncomingHttpHeaders;
  /** The bytes as they came over the wire, still encoded. */
  body: Buffer;
}

/** One request through the app, its body as sent (inject leaves content coding alone). */
async function raw(
  app: FastifyInstance,
  url: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<Raw> {
  const answer = await app.inject({ method: method as 'GET', url, headers });
  return { status: answer.statusCode, headers: answer.headers as IncomingHttpHeaders, body: answer.rawPayload };
}

/** The same over a real socket, for what only the wire shows (chunked transfer, Content-Length). */
function overSocket(base: string, path: string, headers: Record<string, string>): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const outgoing = request(`${base}${path}`, { headers, agent: false }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.once('end', () =>
        resolve({ status: answer.statusCode ?? 0, headers: answer.headers, body: Buffer.concat(chunks) }),
      );
      answer.once('error', reject);
    });
    outgoing.once('error', reject);
    outgoing.setTimeout(60_000, () => outgoing.destroy(new Error(`no answer to ${path}`)));
    outgoing.end();
  });
}

function decoded(answer: Raw): Buffer {
  const coding = answer.headers['content-encoding'];
  if (coding === undefined) return answer.body;
  if (coding === 'gzip') return gunzipSync(answer.body);
  if (coding === 'br') return brotliDecompressSync(answer.body);
  throw new Error(`unexpected Content-Encoding ${coding}`);
}

const varies = (answer: Raw) => /(^|,)\s*accept-encoding\s*(,|$)/i.test(String(answer.headers.vary ?? ''));

/** Accept-Encoding as sent, and the coding the answer must have (undefined: none, identity). */
const NEGOTIATION: ReadonlyArray<{ name: string; accept?: string; coding: 'gzip' | 'br' | undefined }> = [
  { name: 'no Accept-Encoding', coding: undefined },
  { name: 'gzip', accept: 'gzip', coding: 'gzip' },
  { name: 'br', accept: 'br', coding: 'br' },
  { name: 'both, equal: the server prefers br', accept: 'gzip, br', coding: 'br' },
  { name: 'q-values: gzip preferred', accept: 'br;q=0.5, gzip', coding: 'gzip' },
  { name: 'br refused', accept: 'br;q=0, gzip', coding: 'gzip' },
  { name: 'both refused', accept: 'br;q=0, gzip;q=0', coding: undefined },
  { name: 'identity asked for', accept: 'identity', coding: undefined },
  { name: 'identity preferred', accept: 'identity;q=1, gzip;q=0.5', coding: undefined },
  { name: 'identity refused, nothing else offered: identity all the same', accept: 'identity;q=0', coding: undefined },
  { name: 'any', accept: '*', coding: 'br' },
  { name: 'any but gzip', accept: 'gzip;q=0, *', coding: 'br' },
  { name: 'any but br', accept: 'br;q=0, *', coding: 'gzip' },
  { name: 'none at all', accept: '*;q=0', coding: undefined },
  { name: 'both refused, the rest a little', accept: 'gzip;q=0, br;q=0, *;q=0.1', coding: undefined },
  { name: 'x-gzip is gzip', accept: 'x-gzip', coding: 'gzip' },
  { name: 'upper case', accept: 'GZIP', coding: 'gzip' },
  { name: 'unknown encodings', accept: 'compress, snappy', coding: undefined },
  { name: 'encodings not offered', accept: 'deflate, zstd', coding: undefined },
];

/** Headers no client should send; each must get a 200 that decodes to the listing. */
const BROKEN = [
  'gzip;q=abc',
  'gzip;q=2',
  'gzip;q=-1',
  ';;;,,',
  ',',
  'q=0.5',
  ';q=1',
  'gzip;;q=0.5;;',
  '*;*;*',
  'br gzip',
  '\t',
  'ÿþgzip',
  `${'gzip;q=0.1,'.repeat(600)}br`,
  'gzip, '.repeat(2000),
];

for (const backend of BACKENDS) {
  describe(`compressed answers [${backend.name}]`, { skip: backend.skip }, () => {
    // No heartbeat during a test: an event must come out on its own, not pushed by a later write.
    const suite = appForSuite({ EVENTS_HEARTBEAT_MS: '600000' }, backend);
    const app = () => suite.current.app;
    let identity: Buffer;
    const paris: Buffer[] = [];

    it('seeds a listing past the threshold', async () => {
      for (let i = 0; i < 60; i++) {
        const city = i % 2 === 0 ? 'Paris' : 'Lyon';
        const created = await raw(app(), `/users?name=person${i}&age=${i}&city=${city}`, {}, 'POST');
        assert.equal(created.status, 200);
      }
      identity = (await raw(app(), '/users')).body;
      paris.push((await raw(app(), '/users?city=Paris')).body);
      assert.ok(identity.length > 2048, `listing of ${identity.length} bytes`);
    });

    for (const row of NEGOTIATION) {
      it(`Accept-Encoding ${row.accept === undefined ? '(none)' : JSON.stringify(row.accept)}: ${row.name}`, async () => {
        const headers: Record<string, string> = row.accept === undefined ? {} : { 'accept-encoding': row.accept };
        // The kept listing (one buffer) and a filtered one (streamed page by page).
        for (const [url, expected] of [
          ['/users', identity],
          ['/users?city=Paris', paris[0] as Buffer],
        ] as const) {
          const answer = await raw(app(), url, headers);
          assert.equal(answer.status, 200);
          assert.equal(answer.headers['content-encoding'], row.coding, url);
          assert.ok(varies(answer), `Vary: ${answer.headers.vary}`);
          assert.deepEqual(decoded(answer), expected, url);
          const etag = String(answer.headers.etag);
          assert.equal(etag.endsWith(`-${row.coding}"`), row.coding !== undefined, `ETag ${etag}`);
          if (answer.headers['content-length'] !== undefined) {
            assert.equal(Number(answer.headers['content-length']), answer.body.length);
          }
        }
      });
    }

    it('a broken Accept-Encoding is never a 500: the listing, in some coding the client can read', async () => {
      for (const accept of BROKEN) {
        const answer = await raw(app(), '/users', { 'accept-encoding': accept });
        assert.equal(answer.status, 200, JSON.stringify(accept.slice(0, 40)));
        assert.deepEqual(decoded(answer), identity);
      }
    });

    it('a streamed listing is compressed as it streams: chunked, no Content-Length', async () => {
      for (const coding of ['gzip', 'br']) {
        const answer = await overSocket(suite.current.url, '/users?city=Paris', { 'accept-encoding': coding });
        assert.equal(answer.headers['content-encoding'], coding);
        assert.equal(answer.headers['transfer-encoding'], 'chunked');
        assert.equal(answer.headers['content-length'], undefined);
        assert.deepEqual(decoded(answer), paris[0]);
      }
      const whole = await overSocket(suite.current.url, '/users', { 'accept-encoding': 'gzip' });
      if (whole.headers['content-length'] !== undefined) {
        assert.equal(Number(whole.headers['content-length']), whole.body.length, 'Content-Length of the sent bytes');
      }
      assert.deepEqual(decoded(whole), identity);
    });

    it('a small answer (GET /users/1) is not compressed, and still says it varies with Accept-Encoding', async () => {
      const answer = await raw(app(), '/users/1', { 'accept-encoding': 'gzip, br' });
      assert.equal(answer.status, 200);
      assert.equal(answer.headers['content-encoding'], undefined);
      assert.ok(varies(answer));
      assert.equal(Number(answer.headers['content-length']), answer.body.length);
      assert.ok(!String(answer.headers.etag).endsWith('-gzip"'));
    });

    it('If-None-Match: 304 with the ETag of the coding asked for, 200 for another coding', async () => {
      for (const accept of [undefined, 'gzip', 'br']) {
        for (const url of ['/users', '/users?city=Paris', '/users?limit=50']) {
          const headers: Record<string, string> = accept === undefined ? {} : { 'accept-encoding': accept };
          const first = await raw(app(), url, headers);
          const etag = String(first.headers.etag);
          const again = await raw(app(), url, { ...headers, 'if-none-match': etag });
          assert.equal(again.status, 304, `${url} ${accept}`);
          assert.equal(again.headers.etag, etag);
          assert.equal(again.headers['content-encoding'], undefined);
          assert.equal(again.body.length, 0);
          assert.ok(varies(again));
          const other = await raw(app(), url, {
            'accept-encoding': accept === 'br' ? 'gzip' : 'br',
            'if-none-match': etag,
          });
          assert.equal(other.status, 200, `${url}: a copy in ${accept ?? 'identity'} is not one in another coding`);
          assert.notEqual(other.headers.etag, etag);
          assert.equal((await raw(app(), url, { ...headers, 'if-none-match': '*' })).status, 304);
        }
      }
    });

    it('a record large enough to compress: its coded ETag revalidates, and If-Match takes it', async () => {
      const euro = '€'.repeat(200);
      const created = await raw(
        app(),
        `/users?name=${encodeURIComponent(euro)}&age=1&city=${encodeURIComponent(euro)}`,
        {},
        'POST',
      );
      assert.equal(created.status, 200);
      const url = String(created.headers.location);
      const got = await raw(app(), url, { 'accept-encoding': 'gzip' });
      assert.equal(got.headers['content-encoding'], 'gzip');
      const etag = String(got.headers.etag);
      assert.match(etag, /-gzip"$/);
      assert.equal((await raw(app(), url, { 'accept-encoding': 'gzip', 'if-none-match': etag })).status, 304);
      const stale = await app().inject({ method: 'PATCH', url: `${url}?age=2`, headers: { 'if-match': etag } });
      assert.equal(stale.statusCode, 200, stale.body);
      const again = await app().inject({ method: 'PATCH', url: `${url}?age=3`, headers: { 'if-match': etag } });
      assert.equal(again.statusCode, 412, 'the coded tag of an older version does not match');
      assert.equal((await app().inject({ method: 'DELETE', url })).statusCode, 200);
    });

    it('HEAD answers with the headers GET does, without a body', async () => {
      for (const accept of [undefined, 'gzip', 'br']) {
        const headers: Record<string, string> = accept === undefined ? {} : { 'accept-encoding': accept };
        const get = await raw(app(), '/users', headers);
        const head = await raw(app(), '/users', headers, 'HEAD');
        assert.equal(head.status, 200);
        assert.equal(head.body.length, 0);
        for (const name of ['content-encoding', 'etag', 'vary', 'content-type', 'content-length']) {
          assert.equal(head.headers[name], get.headers[name], `${name} with ${accept}`);
        }
      }
    });

    it('problems, 204 and 404s: no 500, and a problem says it varies too', async () => {
      const missing = await raw(app(), '/users/999999', { 'accept-encoding': 'gzip' });
      assert.equal(missing.status, 404);
      assert.match(String(missing.headers['content-type']), /^application\/problem\+json/);
      assert.ok(varies(missing));
      assert.equal(JSON.parse(decoded(missing).toString()).status, 404);
      const options = await raw(app(), '/users', { 'accept-encoding': 'gzip' }, 'OPTIONS');
      assert.equal(options.status, 204);
      assert.equal(options.headers['content-encoding'], undefined);
      assert.equal(options.body.length, 0);
      const bad = await raw(app(), '/users?age=old', { 'accept-encoding': 'br' });
      assert.equal(bad.status, 400);
      assert.equal(JSON.parse(decoded(bad).toString()).status, 400);
    });

    it('every kind of answer the service sends: compressed only if its type may be, which then varies', async () => {
      const paths = [
        '/users',
        '/healthz',
        '/metrics',
        '/openapi.json',
        '/admin',
        '/admin/app.js',
        '/admin/app.css',
        '/admin/icon.svg',
        '/docs/',
        '/docs/json',
        '/docs/yaml',
        '/',
      ];
      for (const path of paths) {
        const answer = await raw(app(), path, { 'accept-encoding': 'gzip' });
        assert.ok(answer.status < 500, `${path}: ${answer.status}`);
        const type = answer.headers['content-type'];
        if (answer.headers['content-encoding'] !== undefined) {
          assert.ok(compressible(type), `${path} was compressed as ${type}, a type the rule leaves out`);
        }
        if (compressible(type)) assert.ok(varies(answer), `${path} (${type}) does not vary with Accept-Encoding`);
      }
      // The API's description in each of its forms is text of tens of kB: each goes out compressed.
      for (const path of ['/openapi.json', '/docs/json', '/docs/yaml']) {
        const answer = await raw(app(), path, { 'accept-encoding': 'gzip' });
        assert.equal(answer.headers['content-encoding'], 'gzip', `${path} (${answer.headers['content-type']})`);
      }
    });

    it('the event stream is never compressed: an event written after connecting arrives on its own', async () => {
      const events: Array<Record<string, string>> = [];
      let headers: IncomingHttpHeaders = {};
      let arrived: () => void = () => undefined;
      const created = new Promise<void>((resolve) => (arrived = resolve));
      const connected = new Promise<void>((resolve, reject) => {
        const outgoing = request(
          `${suite.current.url}/users/events`,
          { headers: { 'accept-encoding': 'gzip, br' } },
          (answer) => {
            headers = answer.headers;
            answer.setEncoding('utf8');
            const parse = sseEvents((event) => {
              events.push(event);
              if (event.event === 'user.created') {
                outgoing.destroy();
                arrived();
              }
            });
            answer.on('data', (chunk: string) => {
              resolve();
              parse(chunk);
            });
          },
        );
        outgoing.once('error', reject);
        outgoing.end();
      });
      await connected;
      assert.equal(headers['content-encoding'], undefined);
      assert.match(String(headers['content-type']), /^text\/event-stream/);
      // One write after the subscriber is in, and nothing after it: the event must come by itself.
      const write = await raw(app(), '/users?name=Streamed&age=5&city=Oslo', {}, 'POST');
      assert.equal(write.status, 200);
      await created;
      assert.match(events.at(-1)?.data ?? '', /"Streamed"/);
    });
  });
}
