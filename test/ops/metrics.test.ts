import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { registerErrorHandlers } from '../../src/http/errors.ts';
import { registerAllMethods } from '../../src/http/methods.ts';
import { HttpError } from '../../src/http/problem.ts';
import { registerMetrics } from '../../src/ops/metrics.ts';
import type { UserStore } from '../../src/store/store.ts';
import { BACKENDS, type Database } from '../helpers/backends.ts';
import { appForSuite } from '../helpers/app.ts';
import { call, createUser, getOnNewConnection, type Target } from '../helpers/http.ts';
import { sendRaw } from '../helpers/raw-http.ts';
import { waitFor } from '../helpers/load.ts';
import { pidsLogging, type RunningServer, startServer } from '../helpers/server.ts';

/** One scrape: the text, and each sample's value by `name{label="value",...}` with labels sorted. */
interface Scrape {
  text: string;
  samples: Map<string, number>;
}

function key(name: string, labels: Record<string, string> = {}): string {
  const parts = Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([label, value]) => `${label}="${value}"`);
  return `${name}{${parts.join(',')}}`;
}

/** Parses the Prometheus text format (label values here hold no escaped quotes or commas). */
function parse(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(match !== null, `not a sample line: ${line}`);
    const labels = Object.fromEntries(
      (match[2] ?? '')
        .split(',')
        .filter((pair) => pair !== '')
        .map((pair) => {
          const [label, quoted] = pair.split('=') as [string, string];
          return [label, quoted.slice(1, -1)];
        }),
    );
    samples.set(key(match[1] as string, labels), Number(match[3]));
  }
  return samples;
}

/**
 * GET /metrics: through app.inject for an app in this process; for a URL, on a connection of its
 * own (so that, with workers, any of them may answer).
 */
async function scrape(target: Target): Promise<Scrape> {
  if (typeof target !== 'string') {
    const answer = await call(target, 'GET', '/metrics');
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
    return { text: answer.text, samples: parse(answer.text) };
  }
  return new Promise((resolve, reject) => {
    const outgoing = request(`${target}/metrics`, { agent: false }, (answer) => {
      let text = '';
      answer.setEncoding('utf8');
      answer.on('data', (chunk: string) => (text += chunk));
      answer.once('end', () => {
        try {
          assert.equal(answer.statusCode, 200, text);
          assert.equal(answer.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
          resolve({ text, samples: parse(text) });
        } catch (error) {
          reject(error);
        }
      });
    });
    outgoing.once('error', reject);
    outgoing.end();
  });
}

function value(scrape: Scrape, name: string, labels: Record<string, string> = {}): number {
  return scrape.samples.get(key(name, labels)) ?? 0;
}

/** How much a sample moved between two scrapes (0 when absent from both). */
function moved(before: Scrape, after: Scrape, name: string, labels: Record<string, string> = {}): number {
  return value(after, name, labels) - value(before, name, labels);
}

// Personal values sent in requests; none may reach the metrics (route patterns only, never URLs).
const NAME = 'Quillon Metricsworth';
const CITY = 'Zyxbridge';
const UNKNOWN_PATH = '/no-such-page/Zyxbridge-secret';

// In process (buildApp, app.inject) on each store; over the app's socket for requests refused before
// routing. The sum over WORKERS=2 at the end runs the real server.
for (const backend of BACKENDS) {
  describe(`GET /metrics [${backend.name}]`, { skip: backend.skip }, () => {
    const suite = appForSuite({}, backend);
    const app = () => suite.current.app;
    let first: Scrape;
    let last: Scrape;
    const created: number[] = [];

    before(async () => {
      first = await scrape(app());
      for (let i = 0; i < 3; i++) created.push(await createUser(app(), `${NAME} ${i}`, 40 + i, CITY));
      for (const id of created) assert.equal((await call(app(), 'GET', `/users/${id}`)).status, 200);
      assert.equal((await call(app(), 'GET', '/users/999999')).status, 404);
      assert.equal((await call(app(), 'GET', UNKNOWN_PATH)).status, 404);
      assert.equal((await call(app(), 'POST', `/users?name=${NAME}&age=old&city=${CITY}`)).status, 400);
      assert.equal((await call(app(), 'GET', '/users?limit=2')).status, 200);
      last = await scrape(app());
    });

    it('counts requests by method, route pattern and status, by exactly what was sent', () => {
      const expected: Array<[method: string, route: string, status: string, count: number]> = [
        ['POST', '/users', '200', 3],
        ['POST', '/users', '400', 1],
        ['GET', '/users/:id', '200', 3],
        ['GET', '/users/:id', '404', 1],
        ['GET', '/users', '200', 1],
        ['GET', 'unmatched', '404', 1],
        // The first scrape, counted once it was answered.
        ['GET', '/metrics', '200', 1],
      ];
      for (const [method, route, status, count] of expected) {
        const labels = { method, route, status };
        assert.equal(moved(first, last, 'http_requests_total', labels), count, JSON.stringify(labels));
      }
      const total = [...last.samples]
        .filter(([name]) => name.startsWith('http_requests_total{'))
        .reduce((sum, [, count]) => sum + count, 0);
      assert.equal(total, 11, 'requests counted that were not sent');
    });

    it('has a latency histogram per method and route, with every request in it', () => {
      const labels = { method: 'GET', route: '/users/:id' };
      assert.equal(moved(first, last, 'http_request_duration_seconds_count', labels), 4);
      assert.equal(value(last, 'http_request_duration_seconds_bucket', { ...labels, le: '+Inf' }), 4);
      assert.ok(value(last, 'http_request_duration_seconds_sum', labels) > 0);
      const fastest = value(last, 'http_request_duration_seconds_bucket', { ...labels, le: '0.0005' });
      const slowest = value(last, 'http_request_duration_seconds_bucket', { ...labels, le: '10' });
      assert.ok(fastest <= slowest && slowest <= 4, 'buckets are cumulative');
    });

    it('times the database by operation', () => {
      const count = (operation: string) => moved(first, last, 'db_operation_duration_seconds_count', { operation });
      assert.equal(count('create'), 3);
      assert.ok(count('get') >= 4, `get: ${count('get')}`);
      assert.ok(count('list') >= 1, `list: ${count('list')}`);
      assert.ok(value(last, 'db_operation_duration_seconds_sum', { operation: 'create' }) > 0);
    });

    it('reports the records stored', () => {
      assert.equal(value(last, 'user_records_stored'), created.length);
    });

    it('has the rate-limited and shed counters at 0, and the process metrics', () => {
      assert.equal(last.samples.get(key('http_requests_rate_limited_total')), 0);
      assert.equal(last.samples.get(key('http_requests_shed_total')), 0);
      assert.ok(value(last, 'process_cpu_user_seconds_total') > 0);
      assert.ok(value(last, 'process_resident_memory_bytes') > 0);
      assert.ok(last.samples.has(key('nodejs_eventloop_lag_seconds')));
    });

    it('never shows a URL or a personal value', () => {
      for (const secret of [NAME.split(' ')[0] as string, CITY, UNKNOWN_PATH, '/users/999999', 'age=old']) {
        assert.ok(!last.text.includes(secret), `the metrics contain ${secret}`);
      }
    });

    it('serves GET only, uncached', async () => {
      const answer = await call(app(), 'GET', '/metrics');
      assert.equal(answer.headers.get('cache-control'), 'no-store');
      assert.equal((await call(app(), 'POST', '/metrics')).status, 405);
      const options = await call(app(), 'OPTIONS', '/metrics');
      assert.equal(options.status, 204);
      assert.equal(options.headers.get('allow'), 'GET, HEAD, OPTIONS');
    });
  });
}

describe('GET /metrics after requests refused before routing', () => {
  const suite = appForSuite({ REQUEST_TIMEOUT_MS: '1000' });
  const head = (lines: string[]) => Buffer.from(`${lines.join('\r\n')}\r\n\r\n`);

  it('counts them by status, since no route (and no request counter) sees them', async () => {
    const first = await scrape(suite.current.app);
    const sent: Array<[status: number, bytes: Buffer]> = [
      [400, Buffer.from('NOT HTTP AT ALL\r\n\r\n')],
      [400, head(['GET /us%ZZers HTTP/1.1', 'Host: a', 'Connection: close'])],
      [417, head(['GET /users HTTP/1.1', 'Host: a', 'Expect: 200-ok', 'Connection: close'])],
      [431, head(['GET /users HTTP/1.1', 'Host: a', `X-Big: ${'b'.repeat(20_000)}`, 'Connection: close'])],
      // Headers that never end: the request timeout answers.
      [408, Buffer.from('GET /users HTTP/1.1\r\nHost: a\r\n')],
    ];
    for (const [status, bytes] of sent) assert.equal((await sendRaw(suite.current.url, bytes)).status, status);
    const last = await scrape(suite.current.app);
    for (const status of ['400', '408', '417', '431']) {
      const expected = sent.filter(([sentStatus]) => String(sentStatus) === status).length;
      assert.equal(moved(first, last, 'http_requests_refused_before_routing_total', { status }), expected, status);
    }
  });
});

describe('GET /metrics with the rate limit reached', () => {
  const suite = appForSuite({ RATE_LIMIT: '3' });

  it('counts each 429 of the real rate limit', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await call(suite.current.app, 'GET', '/users?limit=1')).status);
    assert.deepEqual(statuses, [200, 200, 200, 429, 429]);
    const after = await scrape(suite.current.app);
    assert.equal(value(after, 'http_requests_rate_limited_total'), 2);
    assert.equal(value(after, 'http_requests_total', { method: 'GET', route: '/users', status: '429' }), 2);
  });
});

/** A store that answers without a database: the small app below never reaches it. */
const NO_STORE = new Proxy({} as UserStore, {
  get: () => async () => {
    throw new Error('not used');
  },
});

// The refusals are thrown by onRequest hooks registered after the metrics, as the real limits are;
// this small app throws them on demand, so each counter is seen to move.
describe('rate-limited and shed requests, thrown from an onRequest hook', () => {
  let app: FastifyInstance;
  let base: string;

  before(async () => {
    app = Fastify();
    registerAllMethods(app);
    registerErrorHandlers(app);
    const metrics = registerMetrics(app, NO_STORE);
    // As buildApp does: every answer is reported to the metrics once it has gone.
    app.addHook('onResponse', async (request, reply) => metrics.answered(request, reply));
    app.addHook('onRequest', async (request) => {
      const refuse = request.headers['x-refuse'];
      if (refuse === 'rate') throw new HttpError('rate-limited', 'Too many.');
      if (refuse === 'shed') throw new HttpError('overloaded', 'Busy.');
      if (refuse === 'down') throw new HttpError('unavailable', 'Database down.');
    });
    app.get('/users/:id', async () => ({ ok: true }));
    await app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });
  after(() => app.close());

  it('counts 429s as rate-limited and overload 503s as shed, other 503s as neither', async () => {
    const sent: Array<[path: string, refuse: string, status: number]> = [
      ['/users/1', 'rate', 429],
      ['/users/2', 'rate', 429],
      ['/users/3', 'shed', 503],
      ['/users/4', 'shed', 503],
      [UNKNOWN_PATH, 'shed', 503],
      ['/users/5', 'down', 503],
      ['/users/6', 'none', 200],
    ];
    const before = await scrape(base);
    for (const [path, refuse, status] of sent) {
      assert.equal((await call(base, 'GET', path, { headers: { 'x-refuse': refuse } })).status, status);
    }
    const after = await scrape(base);
    assert.equal(moved(before, after, 'http_requests_rate_limited_total'), 2);
    assert.equal(moved(before, after, 'http_requests_shed_total'), 3);
    const route = (status: string) => ({ method: 'GET', route: '/users/:id', status });
    assert.equal(moved(before, after, 'http_requests_total', route('429')), 2);
    assert.equal(moved(before, after, 'http_requests_total', route('503')), 3);
    assert.equal(moved(before, after, 'http_requests_total', { method: 'GET', route: 'unmatched', status: '503' }), 1);
  });
});

// Each worker counts its own requests; a scrape, whichever worker it reaches, must show the sum.
describe('GET /metrics with WORKERS=2', { timeout: 60_000 }, () => {
  const backend = BACKENDS[0];
  let database: Database | undefined;
  let server: RunningServer | undefined;
  const healthz = { method: 'GET', route: '/healthz', status: '200' };
  const scrapes = { method: 'GET', route: '/metrics', status: '200' };

  before(async () => {
    database = await backend?.fresh();
    server = await startServer({ DATABASE_URL: database?.url ?? '', WORKERS: '2' });
  });
  after(async () => {
    await server?.stop();
    await database?.drop();
  });

  it('every scrape shows the requests of both workers, summed', async () => {
    assert.ok(server !== undefined);
    for (let i = 0; i < 20; i++) assert.equal(await getOnNewConnection(server.url, '/healthz'), 200);
    const workers = pidsLogging(server.logs, 'Server listening at');
    assert.ok(
      // Bounded, generously: the lines come through a pipe that a busy machine may read late.
      await waitFor(() => pidsLogging(server?.logs ?? [], 'request completed').size === 2, 30_000),
      'the requests did not reach both workers',
    );
    for (let i = 0; i < 4; i++) {
      const seen = await scrape(server.url);
      assert.equal(value(seen, 'http_requests_total', healthz), 20, `scrape ${i}`);
      // The earlier scrapes, whichever worker answered them.
      assert.equal(value(seen, 'http_requests_total', scrapes), i, `scrape ${i}`);
      assert.ok(value(seen, 'process_resident_memory_bytes') > 0);
    }
    assert.deepEqual(pidsLogging(server.logs, 'request completed'), workers);
  });

  it('keeps the counts of a worker that died, so no counter goes down', async () => {
    assert.ok(server !== undefined);
    const before = await scrape(server.url);
    const [victim] = pidsLogging(server.logs, 'Server listening at');
    process.kill(victim as number, 'SIGKILL');
    const replaced = await waitFor(() => pidsLogging(server?.logs ?? [], 'Server listening at').size === 3, 30_000);
    assert.ok(replaced, 'no new worker started');
    // The dead worker's counts stay as of the last scrape; only a scrape it answered last is lost.
    let previous = value(before, 'http_requests_total', scrapes);
    for (let i = 0; i < 4; i++) {
      const seen = await scrape(server.url);
      assert.equal(value(seen, 'http_requests_total', healthz), 20, `scrape ${i} after the kill`);
      const count = value(seen, 'http_requests_total', scrapes);
      assert.ok(count >= previous, `the scrape count fell from ${previous} to ${count}`);
      previous = count;
    }
  });
});
