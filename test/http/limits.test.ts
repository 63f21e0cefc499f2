import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { exposureWarning } from '../../src/ops/exposure.ts';
import { appForSuite, startApp } from '../helpers/app.ts';
import { assertProblem, call, rawRequest } from '../helpers/http.ts';
import { type RunningServer, startServer, tempDir } from '../helpers/server.ts';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

// In process (buildApp, app.inject), over the app's socket where Node's HTTP parser sets the limit;
// the tests of a stalled process and of the start-up warning run the real server.
describe('URL and body limits', () => {
  const suite = appForSuite();

  it('a URL of exactly 8 KiB is read; one byte more is 414 problem details', async () => {
    const { app } = suite.current;
    const path = '/users?name=';
    // Read and validated: the name is too long for a record, which is a 400, not a 414.
    const fits = await call(app, 'GET', `${path}${'a'.repeat(8192 - path.length)}`);
    assert.equal(assertProblem(fits, 400).type, '/problems/invalid-input');
    assertProblem(await call(app, 'GET', `${path}${'a'.repeat(8193 - path.length)}`), 414);
  });

  it('a URL past Node’s 16 KiB header limit is 414 too, not 431', async () => {
    for (const size of [20_000, 100_000]) {
      const answer = await call(suite.current.url, 'POST', `/users?name=${'a'.repeat(size)}&age=1&city=x`);
      assert.equal(assertProblem(answer, 414).type, '/problems/uri-too-long');
    }
  });

  it('large headers with a short URL stay 431', async () => {
    const answer = await call(suite.current.url, 'GET', '/users', { headers: { 'x-padding': 'p'.repeat(20_000) } });
    assert.equal(assertProblem(answer, 431).type, '/problems/headers-too-large');
  });

  it('a URL just under 8 KiB with large headers is 431: only the URL counts for 414', async () => {
    const path = `/users?name=${'a'.repeat(8190 - '/users?name='.length)}`;
    const answer = await call(suite.current.url, 'GET', path, { headers: { 'x-padding': 'p'.repeat(10_000) } });
    assert.equal(assertProblem(answer, 431).type, '/problems/headers-too-large');
  });

  it('parameter names of four-byte characters are quoted back short: the answer stays under 4 KiB', async () => {
    // Ten names of sixty emoji (240 bytes each): quoted whole in errors and detail, 4.8 KB of names.
    const names = Array.from({ length: 10 }, (_, n) => `${'\u{1F600}'.repeat(60)}${n}`);
    const path = `/users?${names.map((name) => `${encodeURIComponent(name)}=1`).join('&')}`;
    assert.ok(path.length <= 8192);
    const answer = await call(suite.current.app, 'GET', path);
    const problem = assertProblem(answer, 400);
    assert.ok(Buffer.byteLength(answer.text) < 4096, `answer of ${Buffer.byteLength(answer.text)} bytes`);
    assert.ok(problem.errors.length >= 1);
    for (const error of problem.errors) assert.ok(Buffer.byteLength(error.parameter) <= 64 + 3, error.parameter);
  });

  it('control and format characters in a quoted name come back as \\u escapes', async () => {
    const answer = await call(suite.current.app, 'GET', '/users?a%00b%E2%80%AEc=1');
    const problem = assertProblem(answer, 400);
    assert.equal(problem.errors[0].parameter, 'a\\u0000b\\u202ec');
    assert.ok(!answer.text.includes('\u0000') && !answer.text.includes('\u202e'), answer.text);
  });

  it('a body over 64 KiB is 413 and stores nothing', async () => {
    const { app } = suite.current;
    const body = `name=${'n'.repeat(70_000)}&age=1&city=x`;
    assertProblem(await call(app, 'POST', '/users', { headers: FORM, body }), 413);
    assert.equal((await call(app, 'GET', '/users')).text, '{"data":[]}');
  });
});

describe('rate limit', () => {
  describe('RATE_LIMIT=5', () => {
    // app.inject comes from 127.0.0.1, the trusted proxy.
    const suite = appForSuite({ RATE_LIMIT: '5', TRUST_PROXY: '127.0.0.1' });
    const as = (client: string) => ({ headers: { 'x-forwarded-for': client } });

    it('counts down in RateLimit-* headers, then answers 429 with Retry-After and stores nothing', async () => {
      const { app } = suite.current;
      for (let n = 1; n <= 5; n++) {
        const answer = await call(app, 'POST', `/users?name=rate${n}&age=1&city=x`, as('192.0.2.1'));
        assert.equal(answer.status, 200, answer.text);
        assert.equal(answer.headers.get('ratelimit-limit'), '5');
        assert.equal(answer.headers.get('ratelimit-remaining'), String(5 - n));
        const reset = Number(answer.headers.get('ratelimit-reset'));
        assert.ok(reset >= 1 && reset <= 60, `RateLimit-Reset ${reset}`);
      }
      const refused = await call(app, 'POST', '/users?name=rate6&age=1&city=x', as('192.0.2.1'));
      assert.equal(assertProblem(refused, 429).type, '/problems/rate-limited');
      const retryAfter = Number(refused.headers.get('retry-after'));
      assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
      assert.equal(refused.headers.get('ratelimit-remaining'), '0');
      // Unknown paths and wrong methods count against the same budget.
      assertProblem(await call(app, 'GET', '/nowhere', as('192.0.2.1')), 429);

      const other = await call(app, 'GET', '/users', as('192.0.2.2'));
      assert.equal(other.status, 200, 'another client has its own budget');
      assert.deepEqual(
        other.json.data.map((user: { name: string }) => user.name),
        ['rate1', 'rate2', 'rate3', 'rate4', 'rate5'],
      );
    });

    it('probes and metrics are not limited', async () => {
      for (const path of ['/healthz', '/readyz']) {
        const answer = await call(suite.current.app, 'GET', path, as('192.0.2.1'));
        assert.equal(answer.status, 200, `${path}: ${answer.text}`);
      }
    });
  });

  it('without TRUST_PROXY, X-Forwarded-For does not buy a new budget', async () => {
    const { app, close } = await startApp({ RATE_LIMIT: '2' });
    try {
      const statuses = [];
      for (let n = 0; n < 3; n++) {
        const answer = await call(app, 'GET', '/users', { headers: { 'x-forwarded-for': `198.51.100.${n}` } });
        statuses.push(answer.status);
      }
      assert.deepEqual(statuses, [200, 200, 429]);
    } finally {
      await close();
    }
  });

  describe('defaults', () => {
    const suite = appForSuite();
    it('on by default with a generous budget', async () => {
      const answer = await call(suite.current.app, 'GET', '/users');
      assert.equal(answer.headers.get('ratelimit-limit'), '6000');
    });
  });

  describe('RATE_LIMIT=off', () => {
    const suite = appForSuite({ RATE_LIMIT: 'off' });
    it('sends no RateLimit headers', async () => {
      const answer = await call(suite.current.app, 'GET', '/users');
      assert.equal(answer.status, 200);
      assert.equal(answer.headers.get('ratelimit-limit'), null);
    });
  });
});

describe('overload shedding', () => {
  const data = tempDir();
  let server: RunningServer;
  before(async () => {
    server = await startServer({ DATABASE_URL: `${data.dir}/users.db`, OVERLOAD_LAG_MS: '200', RATE_LIMIT: 'off' });
    // The lag is measured from Fastify's onListen hooks, which may run just after the "listening"
    // line; one answered request shows they have.
    assert.equal((await call(server.url, 'GET', '/healthz')).status, 200);
  });
  after(async () => {
    await server.stop();
    data.cleanup();
  });

  it('requests that queued while the process stalled get 503 with Retry-After; liveness still answers', async () => {
    const get = (path: string) =>
      rawRequest(server.url, `GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
    process.kill(server.pid, 'SIGSTOP');
    let queued: Promise<{ status: number; body: string }>[];
    try {
      queued = [...Array.from({ length: 8 }, () => get('/users')), get('/readyz')];
      await new Promise((resolve) => setTimeout(resolve, 1000));
    } finally {
      process.kill(server.pid, 'SIGCONT');
    }
    const alive = await get('/healthz');
    const answers = await Promise.all(queued);
    for (const answer of answers) {
      assert.equal(answer.status, 503, answer.body);
      assert.equal(JSON.parse(answer.body).type, '/problems/overloaded');
    }
    assert.equal(alive.status, 200, alive.body);

    // Shedding lifts once the loop runs on time again (asked until it has, bounded: on a busy
    // machine the loop may run late a while longer); nothing was stored meanwhile.
    let after = await call(server.url, 'GET', '/users');
    for (let tries = 0; after.status === 503 && tries < 300; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      after = await call(server.url, 'GET', '/users');
    }
    assert.equal(after.status, 200, after.text);
    assert.equal(after.text, '{"data":[]}');
  });

  it('the 503 carries Retry-After and the problem shape', async () => {
    process.kill(server.pid, 'SIGSTOP');
    let pending: Promise<Response>;
    try {
      pending = fetch(`${server.url}/users`, { headers: { connection: 'close' } });
      await new Promise((resolve) => setTimeout(resolve, 600));
    } finally {
      process.kill(server.pid, 'SIGCONT');
    }
    const response = await pending;
    const text = await response.text();
    assertProblem({ status: response.status, headers: response.headers, text, json: JSON.parse(text) }, 503);
    assert.ok(Number(response.headers.get('retry-after')) >= 1);
  });
});

describe('the warning when reachable beyond loopback without tokens', () => {
  const rows = [
    { host: '127.0.0.1', tokens: [], warns: false },
    { host: '127.10.0.1', tokens: [], warns: false },
    { host: 'localhost', tokens: [], warns: false },
    { host: '::1', tokens: [], warns: false },
    { host: '::ffff:127.0.0.1', tokens: [], warns: false },
    { host: '0.0.0.0', tokens: [], warns: true },
    { host: '::', tokens: [], warns: true },
    { host: '10.1.2.3', tokens: [], warns: true },
    { host: 'api.internal', tokens: [], warns: true },
    { host: '0.0.0.0', tokens: [{ scope: 'read' as const, token: 'abcdef' }], warns: false },
  ];
  for (const row of rows) {
    it(`${row.host}${row.tokens.length > 0 ? ' with tokens' : ''}: ${row.warns ? 'warns' : 'quiet'}`, () => {
      const warning = exposureWarning(row);
      assert.equal(warning !== undefined, row.warns, warning);
      if (warning !== undefined) assert.match(warning, /API_TOKENS/);
    });
  }

  it('the real server on loopback prints no such warning', async () => {
    const data = tempDir();
    const server = await startServer({ DATABASE_URL: `${data.dir}/users.db` });
    await call(server.url, 'GET', '/healthz');
    await server.stop();
    data.cleanup();
    assert.ok(server.logs.length > 0);
    assert.equal(
      server.logs.find((line) => line.includes('API_TOKENS')),
      undefined,
    );
  });
});
