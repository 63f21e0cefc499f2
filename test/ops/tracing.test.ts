import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { type AddressInfo, createServer as createTcpServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import BetterSqlite from 'better-sqlite3';
import pg from 'pg';
import { BACKENDS, type Backend, type Database } from '../helpers/backends.ts';
import { CLIENT, ERROR, type ReceivedSpan, SERVER, startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { sendRaw } from '../helpers/raw-http.ts';
import { type RunningServer, startServer, tempDir } from '../helpers/server.ts';

// The real service with traces on (OTEL_EXPORTER_OTLP_ENDPOINT), exporting to a receiver of the
// test's own, on each store: what every span says, who is whose parent, what never appears in
// one, what hostile trace headers do, the flush at SIGTERM and a collector that never answers.

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const TOKEN = hex(24);
const AUTH = { authorization: `Bearer ${TOKEN}` };
// What must never leave in a span: record fields, query values, the token, a webhook URL's secret.
const NAME = `Zelda${hex(4)}`;
const CITY = `Quux${hex(4)}`;
const HOOK_KEY = hex(12);
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;

/** A webhook receiver that keeps the `traceparent` of every delivery and answers 204. */
async function startHookReceiver() {
  const traceparents: string[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      traceparents.push(String(req.headers.traceparent));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}/hook?key=${HOOK_KEY}`,
    traceparents,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function until<T>(read: () => T | undefined): Promise<T> {
  for (const end = Date.now() + 60_000; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
    const value = read();
    if (value !== undefined) return value;
  }
  throw new Error('not seen within 60 s');
}

const only = (spans: ReceivedSpan[], what: string): ReceivedSpan => {
  assert.equal(spans.length, 1, `one ${what} span, got ${spans.length}`);
  return spans[0] as ReceivedSpan;
};

/** The database of a backend, as its service opened it, for the test to hold a lock on. */
function databaseUrl(backend: Backend, database: Database | undefined, dir: string): string {
  return backend.name === 'postgresql' ? (database as Database).url : join(dir, 'users.db');
}

/** Holds the users table's write lock: a write waits DATABASE_TIMEOUT_MS, then fails (503). */
async function lockUsers(backend: Backend, url: string): Promise<() => Promise<void>> {
  if (backend.name === 'sqlite') {
    const db = new BetterSqlite(url);
    db.exec('BEGIN EXCLUSIVE');
    return async () => {
      db.exec('ROLLBACK');
      db.close();
    };
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('BEGIN');
  await client.query('LOCK TABLE users IN ACCESS EXCLUSIVE MODE');
  return async () => {
    await client.query('ROLLBACK');
    await client.end();
  };
}

for (const backend of BACKENDS) {
  describe(`traces on ${backend.name}`, { skip: backend.skip }, () => {
    const data = tempDir();
    let collector: Awaited<ReturnType<typeof startOtlpReceiver>>;
    let hooks: Awaited<ReturnType<typeof startHookReceiver>>;
    let database: Database | undefined;
    let server: RunningServer;
    let port: number;
    let recordId: number;

    before(async () => {
      collector = await startOtlpReceiver();
      hooks = await startHookReceiver();
      database = backend.name === 'postgresql' ? await backend.fresh() : undefined;
      server = await startServer({
        DATABASE_URL: databaseUrl(backend, database, data.dir),
        API_TOKENS: `write:${TOKEN}`,
        WEBHOOK_URLS: hooks.url,
        WEBHOOK_SECRET: SECRET,
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=k1',
        OTEL_BSP_SCHEDULE_DELAY: '50',
      });
      port = Number(new URL(server.url).port);
    });
    after(async () => {
      await server?.stop();
      await collector?.close();
      await hooks?.close();
      await database?.drop();
      data.cleanup();
    });

    it("a request with a traceparent is its caller's child, and each store call is the request's child", async () => {
      const traceId = hex(16);
      const callerId = hex(8);
      const answer = await fetch(`${server.url}/users?name=${NAME}&age=41&city=${CITY}`, {
        method: 'POST',
        headers: { ...AUTH, traceparent: `00-${traceId}-${callerId}-01`, 'user-agent': 'traces-test' },
      });
      assert.equal(answer.status, 200);
      recordId = Number(answer.headers.get('location')?.split('/').at(-1));
      const request = only(await collector.find((s) => s.traceId === traceId && s.kind === SERVER), 'server');
      assert.equal(request.parentSpanId, callerId);
      assert.equal(request.name, 'POST /users');
      assert.equal(request.status, 0);
      // Every attribute, so that nothing else (a path, a query, a header) is there unseen.
      assert.deepEqual(request.attributes, {
        'http.request.method': 'POST',
        'http.route': '/users',
        'http.response.status_code': 200,
        'url.scheme': 'http',
        'server.address': '127.0.0.1',
        'server.port': port,
        'network.protocol.version': '1.1',
        'user_agent.original': 'traces-test',
      });
      assert.equal(request.resource['service.name'], 'user-records');
      const calls = await collector.find((s) => s.parentSpanId === request.spanId);
      assert.ok(
        calls.some((s) => s.name === 'store.create'),
        calls.map((s) => s.name).join(),
      );
      for (const call of calls) {
        assert.equal(call.traceId, traceId);
        assert.equal(call.kind, CLIENT);
        assert.deepEqual(call.attributes, {
          'db.system.name': backend.name,
          'db.operation.name': call.name.slice('store.'.length),
        });
      }
      // OTEL_EXPORTER_OTLP_HEADERS, read by the SDK.
      assert.equal(collector.headers[0]?.['x-collector-key'], 'k1');
    });

    it('a request without one starts a trace, named by its route pattern', async () => {
      const answer = await fetch(`${server.url}/users/${recordId}?fields=name,city`, {
        headers: { ...AUTH, 'user-agent': 'no-parent' },
      });
      assert.equal(answer.status, 200);
      const match = (s: ReceivedSpan) => s.attributes['user_agent.original'] === 'no-parent';
      const request = only(await collector.find(match), 'server');
      assert.equal(request.parentSpanId, undefined);
      assert.equal(request.name, 'GET /users/:id');
      assert.equal(request.attributes['http.route'], '/users/:id');
      const calls = await collector.find((s) => s.parentSpanId === request.spanId);
      assert.deepEqual(
        calls.map((s) => s.name),
        ['store.get'],
      );
    });

    it('a request with a body keeps its trace through the reading of the body', async () => {
      const answer = await fetch(`${server.url}/users/${recordId}`, {
        method: 'PATCH',
        headers: { ...AUTH, 'content-type': 'application/json', 'user-agent': 'with-body' },
        body: JSON.stringify({ city: CITY }),
      });
      assert.equal(answer.status, 200);
      const match = (s: ReceivedSpan) => s.attributes['user_agent.original'] === 'with-body';
      const request = only(await collector.find(match), 'server');
      assert.equal(request.name, 'PATCH /users/:id');
      const calls = await collector.find((s) => s.parentSpanId === request.spanId);
      assert.ok(
        calls.some((s) => s.name === 'store.update'),
        calls.map((s) => s.name).join(),
      );
    });

    it('a 4xx answer is not an error of the server span', async () => {
      const cases = [
        { agent: 'four-oh-four', path: '/users/999999', headers: AUTH, status: 404, route: '/users/:id' },
        { agent: 'four-oh-one', path: `/users?name=${NAME}`, headers: {}, status: 401, route: '/users' },
        { agent: 'unmatched', path: `/nothing/${NAME}`, headers: AUTH, status: 404, route: undefined },
      ];
      for (const { agent, path, headers, status, route } of cases) {
        const answer = await fetch(`${server.url}${path}`, { headers: { ...headers, 'user-agent': agent } });
        assert.equal(answer.status, status, agent);
        const span = only(await collector.find((s) => s.attributes['user_agent.original'] === agent), agent);
        assert.equal(span.status, 0, agent);
        assert.equal(span.attributes['http.response.status_code'], status, agent);
        assert.equal(span.attributes['http.route'], route, agent);
        assert.equal(span.name, route === undefined ? 'GET' : `GET ${route}`, agent);
        assert.equal(span.attributes['error.type'], undefined, agent);
      }
    });

    it("a webhook delivery is a span, and the receiver got that span's traceparent", async () => {
      const traceparent = await until(() => hooks.traceparents[0]);
      const [, traceId, spanId, flags] = traceparent.split('-');
      assert.equal(flags, '01');
      const delivery = only(await collector.find((s) => s.spanId === spanId), 'delivery');
      assert.equal(delivery.traceId, traceId);
      assert.equal(delivery.parentSpanId, undefined);
      assert.equal(delivery.name, 'POST');
      assert.equal(delivery.kind, CLIENT);
      assert.equal(delivery.status, 0);
      assert.deepEqual(delivery.attributes, {
        'http.request.method': 'POST',
        'url.scheme': 'http',
        'server.address': '127.0.0.1',
        'server.port': hooks.port,
        'http.response.status_code': 204,
        'webhook.id': delivery.attributes['webhook.id'],
      });
      assert.match(String(delivery.attributes['webhook.id']), /^msg_\d+$/);
    });

    it('hostile trace headers never answer 5xx and a malformed traceparent joins no trace', async () => {
      const valid = () => `00-${hex(16)}-${hex(8)}-01`;
      const garbage = Array.from({ length: 600 }, (_, i) => `k${i}=${'v'.repeat(i % 40)}`).join(',');
      // expect: the span's parent (`root`: none; `given`: the traceparent's), or no span at all.
      const cases: Array<{ name: string; lines: string[]; status: number; expect: 'root' | 'given' | 'none' }> = [
        { name: 'not hex', lines: [`traceparent: 00-${'zz'.repeat(16)}-${hex(8)}-01`], status: 200, expect: 'root' },
        { name: 'version ff', lines: [`traceparent: ff-${hex(16)}-${hex(8)}-01`], status: 200, expect: 'root' },
        {
          name: 'zero trace id',
          lines: [`traceparent: 00-${'0'.repeat(32)}-${hex(8)}-01`],
          status: 200,
          expect: 'root',
        },
        {
          name: 'zero parent id',
          lines: [`traceparent: 00-${hex(16)}-${'0'.repeat(16)}-01`],
          status: 200,
          expect: 'root',
        },
        {
          name: 'upper case',
          lines: [`traceparent: 00-${hex(16).toUpperCase()}-${hex(8)}-01`],
          status: 200,
          expect: 'root',
        },
        {
          name: 'version 00, one part too many',
          lines: [`traceparent: ${valid()}-extra`],
          status: 200,
          expect: 'root',
        },
        { name: 'empty', lines: ['traceparent: '], status: 200, expect: 'root' },
        { name: '8 KB long', lines: [`traceparent: 00-${'a'.repeat(8000)}`], status: 200, expect: 'root' },
        {
          name: 'two valid ones',
          lines: [`traceparent: ${valid()}`, `traceparent: ${valid()}`],
          status: 200,
          expect: 'root',
        },
        {
          name: '200 of them',
          lines: Array.from({ length: 200 }, () => `traceparent: ${valid()}`),
          status: 200,
          expect: 'root',
        },
        {
          name: 'bytes above ASCII',
          lines: [`traceparent: 00-\u00ff\u00fe-${hex(8)}-01`],
          status: 200,
          expect: 'root',
        },
        {
          name: 'a future version with more parts',
          lines: [`traceparent: cc-${hex(16)}-${hex(8)}-01-more`],
          status: 200,
          expect: 'given',
        },
        {
          name: 'tracestate garbage',
          lines: [`traceparent: ${valid()}`, 'tracestate: =,,=;;\t,@@@=x,a=,=b'],
          status: 200,
          expect: 'given',
        },
        {
          name: 'tracestate of 600 members',
          lines: [`traceparent: ${valid()}`, `tracestate: ${garbage}`],
          status: 200,
          expect: 'given',
        },
        { name: 'tracestate alone', lines: [`tracestate: ${garbage}`], status: 200, expect: 'root' },
        { name: 'past the header limit', lines: [`traceparent: ${'a'.repeat(20_000)}`], status: 431, expect: 'none' },
      ];
      for (const [index, { name, lines, status, expect }] of cases.entries()) {
        const agent = `hostile-${index}`;
        const head = [
          `GET /users/${recordId} HTTP/1.1`,
          `Host: 127.0.0.1:${port}`,
          `Authorization: Bearer ${TOKEN}`,
          `User-Agent: ${agent}`,
          ...lines,
          'Connection: close',
        ];
        const answer = await sendRaw(server.url, Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1'));
        assert.equal(answer.status, status, name);
        if (expect === 'none') continue;
        const span = only(await collector.find((s) => s.attributes['user_agent.original'] === agent), name);
        const given = /traceparent: [0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})/.exec(lines.join('\n'));
        if (expect === 'given') {
          assert.equal(span.traceId, given?.[1], name);
          assert.equal(span.parentSpanId, given?.[2], name);
        } else assert.equal(span.parentSpanId, undefined, name);
      }
      assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
    });

    it('no span carries a record field, a query value, the token, a path or the webhook URL', async () => {
      // Everything above was exported by now: each test waited for its own spans.
      const all = collector.bodies.join('\n');
      for (const secret of [NAME, CITY, TOKEN, HOOK_KEY, '/hook', `/users/${recordId}`, 'fields=', 'name=', '?']) {
        assert.ok(!all.includes(secret), `${secret} was exported`);
      }
      assert.deepEqual(collector.refused, []);
    });
  });

  describe(`traces on ${backend.name}: a store failure, and the flush at SIGTERM`, { skip: backend.skip }, () => {
    it('a failed store call and its 5xx answer are errors, exported when the service stops', async () => {
      const data = tempDir();
      const collector = await startOtlpReceiver();
      const database = backend.name === 'postgresql' ? await backend.fresh() : undefined;
      const url = databaseUrl(backend, database, data.dir);
      const server = await startServer({
        DATABASE_URL: url,
        DATABASE_TIMEOUT_MS: '1000',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/v1/traces`,
        OTEL_SERVICE_NAME: 'records-under-test',
        // Nothing leaves before the stop but through the flush.
        OTEL_BSP_SCHEDULE_DELAY: '600000',
      });
      try {
        const release = await lockUsers(backend, url);
        let status: number;
        try {
          const answer = await fetch(`${server.url}/users?name=Locked&age=1&city=Out`, { method: 'POST' });
          status = answer.status;
          await answer.text();
        } finally {
          await release();
        }
        assert.equal(status, 503);
        assert.equal(collector.spans.length, 0);
        assert.equal(await server.stop('SIGTERM'), 0);
        const request = only(
          collector.spans.filter((s) => s.kind === SERVER && s.name === 'POST /users'),
          'server',
        );
        assert.equal(request.status, ERROR);
        assert.equal(request.attributes['error.type'], '503');
        assert.equal(request.resource['service.name'], 'records-under-test');
        const failed = collector.spans.filter((s) => s.parentSpanId === request.spanId && s.status === ERROR);
        assert.equal(only(failed, 'failed store').name, 'store.create');
        // On SQLite the write's wait ran out before it was taken: given up, and not stored.
        assert.equal(
          failed[0]?.attributes['error.type'],
          backend.name === 'sqlite' ? 'StoreGaveUpError' : 'StoreUnavailableError',
        );
      } finally {
        await server.stop();
        await collector.close();
        await database?.drop();
        data.cleanup();
      }
    });
  });
}

describe('traces to a collector that never answers', () => {
  it('answers as usual, and stops within SHUTDOWN_TIMEOUT_MS with exit code 0', async () => {
    const held: Socket[] = [];
    const silent = createTcpServer((socket) => void held.push(socket.on('error', () => undefined)));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const data = tempDir();
    const server = await startServer({
      DATABASE_URL: join(data.dir, 'users.db'),
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`,
      OTEL_BSP_SCHEDULE_DELAY: '20',
      // The exporter waits 10 s for an answer by default; the stop must not.
      SHUTDOWN_TIMEOUT_MS: '3000',
    });
    try {
      for (let i = 0; i < 20; i++) {
        const answer = await fetch(`${server.url}/users?name=N${i}&age=1&city=C`, { method: 'POST' });
        assert.equal(answer.status, 200);
        await answer.text();
      }
      await until(() => (held.length > 0 ? true : undefined));
      // 1 would mean the shutdown timed out (src/serve.ts).
      assert.equal(await server.stop('SIGTERM'), 0);
    } finally {
      await server.stop();
      for (const socket of held) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
      data.cleanup();
    }
  });
});
