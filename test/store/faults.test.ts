import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type Database from 'better-sqlite3';
import { openBetterSqlite } from '../../src/store/sqlite/native-objects.ts';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config/load.ts';
import { openSqliteStore } from '../../src/store/sqlite/store.ts';
import { BACKENDS } from '../helpers/backends.ts';
import { rawRequest } from '../helpers/http.ts';
import { serverForSuite, startServer, tempDir } from '../helpers/server.ts';

// A real fault: another connection holds the write lock of the same SQLite file.
describe('database faults', () => {
  const data = tempDir();
  const path = `${data.dir}/users.db`;
  let app: FastifyInstance;
  let other: Database.Database;

  before(async () => {
    const store = await openSqliteStore(path, { busyTimeoutMs: 50 });
    app = await buildApp({ ...loadConfig({}, []), logLevel: 'silent' }, { store });
    app.addHook('onClose', async () => store.close());
    other = openBetterSqlite(path);
  });
  after(async () => {
    other.close();
    await app.close();
    data.cleanup();
  });

  it('a write that cannot get the lock answers 503 problem details with Retry-After, then works again', async () => {
    assert.equal((await app.inject({ method: 'POST', url: '/users?name=A&age=1&city=B' })).statusCode, 200);
    other.exec('BEGIN EXCLUSIVE');
    const blocked = await app.inject({ method: 'POST', url: '/users?name=C&age=2&city=D' });
    assert.equal(blocked.statusCode, 503);
    assert.match(String(blocked.headers['content-type']), /^application\/problem\+json/);
    assert.equal(blocked.headers['retry-after'], '1');
    assert.equal(blocked.json().type, '/problems/unavailable');
    const read = await app.inject({ method: 'GET', url: '/users' });
    assert.equal(read.statusCode, 200, 'readers are not blocked in WAL mode');
    other.exec('COMMIT');
    assert.equal((await app.inject({ method: 'POST', url: '/users?name=E&age=3&city=F' })).statusCode, 200);
    const names = (await app.inject({ method: 'GET', url: '/users' })).json().data.map((r: { name: string }) => r.name);
    assert.deepEqual(names, ['A', 'E']);
  });

  it('requests that arrive while the app is closing answer 503 problem details', async () => {
    const store = await openSqliteStore(':memory:');
    const closing = await buildApp({ ...loadConfig({}, []), logLevel: 'silent' }, { store });
    // Holds the close half-way (after the app's own preClose hook) so a request can arrive meanwhile.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let paused = () => {};
    const reached = new Promise<void>((resolve) => {
      paused = resolve;
    });
    closing.addHook('preClose', async () => {
      paused();
      await held;
    });
    const url = await closing.listen({ port: 0, host: '127.0.0.1' });
    const done = closing.close();
    await reached;
    const answer = await fetch(`${url}/users`);
    release();
    await done;
    await store.close();
    assert.equal(answer.status, 503);
    assert.equal(answer.headers.get('retry-after'), '1');
    assert.equal(((await answer.json()) as { type: string }).type, '/problems/unavailable');
  });
});

describe('slow clients', () => {
  it('a body that stops arriving is answered 408 problem details and the connection closed', async () => {
    const data = tempDir();
    const server = await startServer({ DATABASE_URL: `${data.dir}/users.db`, REQUEST_TIMEOUT_MS: '1000' });
    // The configured 1 s (checked once a second) answers it, not the default 30 s: the bound is the
    // default, so a busy machine has some 28 s of slack before it could fail this.
    const { requestTimeoutMs: defaultTimeoutMs } = loadConfig({}, []);
    try {
      const started = Date.now();
      const answer = await rawRequest(
        server.url,
        'POST /users HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{"na',
        { keepOpen: true, timeoutMs: defaultTimeoutMs + 10_000 },
      );
      const took = Date.now() - started;
      assert.equal(answer.status, 408);
      assert.equal(JSON.parse(answer.body).type, '/problems/request-timeout');
      assert.ok(took < defaultTimeoutMs, `answered after ${took} ms, not before the default request timeout`);
      const list = await fetch(`${server.url}/users`);
      assert.equal(await list.text(), '{"data":[]}');
    } finally {
      await server.stop();
      data.cleanup();
    }
  });
});

for (const backend of BACKENDS) {
  describe(`a client that ends its side once the request is sent [${backend.name}]`, { skip: backend.skip }, () => {
    const server = serverForSuite({}, backend);

    it('still gets its answer, even one that needs a database round trip', async () => {
      // rawRequest half-closes after writing, as HTTP/1.0 clients and `nc` do.
      for (const path of ['/users/1000000', '/users?limit=5', '/readyz']) {
        const answer = await rawRequest(
          server.url,
          `GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`,
        );
        assert.ok(answer.status === 404 || answer.status === 200, `${path}: ${answer.status} ${answer.body}`);
        assert.notEqual(answer.body, '', `${path}: an empty answer`);
      }
    });
  });
}
