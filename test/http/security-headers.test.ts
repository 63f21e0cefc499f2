import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS } from '../helpers/chromium.ts';
import { appForSuite } from '../helpers/app.ts';
import { type Answer, call } from '../helpers/http.ts';
import { runScenario, runScenarios, type Scenario } from '../helpers/scenario.ts';
import { startServer, tempDir } from '../helpers/server.ts';

const JSON_CSP = "default-src 'none';frame-ancestors 'none'";
const APP = 'https://app.example.com';
const ADMIN = 'https://admin.example.com';
const STRANGER = 'https://evil.example.net';
const READ = 'read-token-headers-1a2b-9c8d7e6f5a4b';
const WRITE = 'write-token-headers-3c4d-1e2f3a4b5c6d';

const EXPOSED = [
  'ETag',
  'Location',
  'Link',
  'Retry-After',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'X-Request-Id',
  'Idempotent-Replayed',
  'X-Total-Count',
  'Preference-Applied',
];
const ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'If-Match',
  'If-None-Match',
  'Idempotency-Key',
  'Last-Event-ID',
  'Prefer',
  'X-Request-Id',
];
const ALLOWED_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** The headers every answer carries, whatever its status; `csp` differs for the docs page. */
function assertSecurityHeaders(answer: Answer, what: string, csp: string | RegExp = JSON_CSP): void {
  const get = (name: string) => answer.headers.get(name);
  if (typeof csp === 'string') assert.equal(get('content-security-policy'), csp, `${what}: CSP`);
  else assert.match(get('content-security-policy') ?? '', csp, `${what}: CSP`);
  assert.equal(get('x-content-type-options'), 'nosniff', `${what}: X-Content-Type-Options`);
  assert.equal(get('referrer-policy'), 'no-referrer', `${what}: Referrer-Policy`);
  assert.equal(get('x-frame-options'), 'DENY', `${what}: X-Frame-Options`);
  assert.equal(get('cross-origin-resource-policy'), 'same-origin', `${what}: Cross-Origin-Resource-Policy`);
  assert.equal(get('cross-origin-opener-policy'), 'same-origin', `${what}: Cross-Origin-Opener-Policy`);
  // Left to the TLS proxy in front (see docs/security.md).
  assert.equal(get('strict-transport-security'), null, `${what}: Strict-Transport-Security`);
}

function list(header: string | null): string[] {
  return (header ?? '').split(',').map((item) => item.trim().toLowerCase());
}

function assertNoCors(answer: Answer, what: string): void {
  for (const name of [
    'access-control-allow-origin',
    'access-control-expose-headers',
    'access-control-allow-methods',
    'access-control-allow-headers',
  ]) {
    assert.equal(answer.headers.get(name), null, `${what}: ${name}`);
  }
}

// In process (buildApp, app.inject; over the app's socket for what Node's parser answers), but for
// the real browser at the end, which talks to a server process.
describe('security headers, CORS off (the default)', () => {
  const suite = appForSuite();

  const answers: ReadonlyArray<{
    name: string;
    method: string;
    path: string;
    body?: string;
    headers?: Record<string, string>;
    status: number;
    socket?: boolean;
  }> = [
    { name: 'a JSON 200', method: 'GET', path: '/users', status: 200 },
    { name: 'a created record', method: 'POST', path: '/users?name=Hal&age=9&city=Oslo', status: 200 },
    { name: 'a health check', method: 'GET', path: '/healthz', status: 200 },
    { name: 'the OpenAPI document', method: 'GET', path: '/openapi.json', status: 200 },
    { name: 'the start page’s links as JSON', method: 'GET', path: '/', status: 200 },
    { name: 'a plain OPTIONS', method: 'OPTIONS', path: '/users', status: 204 },
    { name: 'a problem 400 (invalid input)', method: 'GET', path: '/users?age=abc', status: 400 },
    { name: 'a problem 404 (no such record)', method: 'GET', path: '/users/999999', status: 404 },
    { name: 'a problem 404 (no such path)', method: 'GET', path: '/nothing-here', status: 404 },
    { name: 'a problem 405', method: 'DELETE', path: '/users', status: 405 },
    {
      name: 'a problem 403 (a change sent from another site’s page)',
      method: 'POST',
      path: '/users?name=Eve&age=9&city=Oslo',
      headers: { origin: STRANGER },
      status: 403,
    },
    {
      name: 'a problem 413 (refused while reading the body)',
      method: 'POST',
      path: '/users',
      headers: { 'content-type': 'application/json' },
      body: `{"name":"${'a'.repeat(70_000)}"}`,
      status: 413,
    },
    { name: 'a problem 414 (URL over 8 KiB)', method: 'GET', path: `/users?name=${'a'.repeat(9000)}`, status: 414 },
    // Answered before any hook runs: by Fastify's router, and by Node's parser (on the socket).
    { name: 'a problem 400 (URL not decodable)', method: 'GET', path: '/users/%E0%A4%A', status: 400 },
    {
      name: 'a problem 414 (URL past 16 KiB)',
      method: 'GET',
      path: `/users?name=${'a'.repeat(20_000)}`,
      status: 414,
      socket: true,
    },
  ];
  runScenarios(
    () => suite.current,
    answers.map((row): Scenario => ({
      name: `on ${row.name}: ${row.method} ${row.path.slice(0, 40)}`,
      method: row.method,
      url: row.path,
      // Reads carry an Origin, as a browser's would; changes from another site are refused (the 403 row).
      headers: { ...(['GET', 'HEAD', 'OPTIONS'].includes(row.method) ? { origin: APP } : {}), ...row.headers },
      body: row.body,
      socket: row.socket,
      expectedStatus: row.status,
      ...(row.status >= 400 ? { expectedProblem: {} } : {}),
      after: (answer) => {
        assertSecurityHeaders(answer, row.name);
        assertNoCors(answer, row.name);
      },
    })),
  );

  it('on the docs page: a CSP of its own, self only', async () => {
    const answer = await call(suite.current.app, 'GET', '/docs');
    assert.equal(answer.status, 200);
    assertSecurityHeaders(answer, '/docs', /^default-src 'none'; script-src 'self'; /);
    const csp = answer.headers.get('content-security-policy') ?? '';
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(
      csp,
      /https?:|\*|'unsafe-inline'|'unsafe-eval'/,
      'the docs CSP allows something remote or inline',
    );
  });

  it('on the start page for a browser: a CSP of its own, no script at all', async () => {
    const answer = await call(suite.current.app, 'GET', '/', { headers: { accept: 'text/html' } });
    assert.equal(answer.status, 200);
    assertSecurityHeaders(answer, '/', /^default-src 'none'; style-src 'self'; /);
    const csp = answer.headers.get('content-security-policy') ?? '';
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /script-src|https?:|\*|'unsafe-/, 'the start page’s CSP allows a script or more');
  });

  it('answers a preflight with no CORS headers', async () => {
    const answer = await call(suite.current.app, 'OPTIONS', '/users', {
      headers: { origin: APP, 'access-control-request-method': 'POST' },
    });
    assertNoCors(answer, 'preflight');
  });
});

describe(`CORS for listed origins, with tokens required`, () => {
  const suite = appForSuite({ CORS_ORIGINS: `${APP},${ADMIN}`, API_TOKENS: `read:${READ},write:${WRITE}` });

  function assertCors(answer: Answer, origin: string, what: string): void {
    assert.equal(answer.headers.get('access-control-allow-origin'), origin, `${what}: Access-Control-Allow-Origin`);
    assert.ok(list(answer.headers.get('vary')).includes('origin'), `${what}: Vary ${answer.headers.get('vary')}`);
    assert.deepEqual(
      list(answer.headers.get('access-control-expose-headers')),
      EXPOSED.map((name) => name.toLowerCase()),
      `${what}: Access-Control-Expose-Headers`,
    );
    assert.equal(answer.headers.get('access-control-allow-credentials'), null, `${what}: credentials`);
  }

  const requests: ReadonlyArray<{ name: string; method: string; path: string; token?: string; status: number }> = [
    { name: 'a read', method: 'GET', path: '/users', token: READ, status: 200 },
    { name: 'a write', method: 'POST', path: '/users?name=Ivy&age=3&city=Bern', token: WRITE, status: 200 },
    { name: 'a 401 (so the page can read why)', method: 'GET', path: '/users', status: 401 },
    { name: 'a 403', method: 'DELETE', path: '/users/1', token: READ, status: 403 },
    { name: 'a 404', method: 'GET', path: '/users/999999', token: READ, status: 404 },
  ];
  const withToken = (token: string | undefined): Record<string, string> =>
    token === undefined ? {} : { authorization: `Bearer ${token}` };
  const scenarios: Scenario[] = [];
  for (const row of requests) {
    for (const origin of [APP, ADMIN]) {
      scenarios.push({
        name: `a listed origin (${origin}) gets CORS headers on ${row.name}`,
        method: row.method,
        url: row.path,
        headers: { origin, ...withToken(row.token) },
        expectedStatus: row.status,
        after: (answer) => {
          assertCors(answer, origin, row.name);
          assertSecurityHeaders(answer, row.name);
        },
      });
    }
    // A change sent from an unlisted site's page is refused whatever its token.
    const write = !['GET', 'HEAD', 'OPTIONS'].includes(row.method);
    scenarios.push({
      name: `an unlisted origin gets none on ${row.name}`,
      method: row.method,
      url: row.path,
      headers: { origin: STRANGER, ...withToken(row.token) },
      expectedStatus: write ? 403 : row.status,
      ...(write ? { expectedProblem: { type: '/problems/cross-origin-write' } } : {}),
      after: (answer) => {
        assertNoCors(answer, row.name);
        assert.ok(
          list(answer.headers.get('vary')).includes('origin'),
          'a cache must not serve this to a listed origin',
        );
      },
    });
  }
  for (const [method, path] of [
    ['POST', '/users'],
    ['GET', '/users'],
    ['PATCH', '/users/1'],
    ['DELETE', '/users/1'],
    ['PUT', '/users/999999'],
  ] as const) {
    scenarios.push({
      name: `answers a preflight for ${method} ${path} without a token`,
      method: 'OPTIONS',
      url: path,
      headers: {
        origin: APP,
        'access-control-request-method': method,
        'access-control-request-headers': 'authorization,content-type,if-match,idempotency-key',
      },
      expectedStatus: 204,
      expectedBody: '',
      expectedHeaders: { 'www-authenticate': null },
      after: (answer) => {
        assertCors(answer, APP, 'preflight');
        assert.deepEqual(
          list(answer.headers.get('access-control-allow-methods')),
          ALLOWED_METHODS.map((m) => m.toLowerCase()),
        );
        assert.deepEqual(
          list(answer.headers.get('access-control-allow-headers')),
          ALLOWED_HEADERS.map((h) => h.toLowerCase()),
        );
        assert.ok(Number(answer.headers.get('access-control-max-age')) > 0);
        assertSecurityHeaders(answer, 'preflight');
      },
    });
  }
  runScenarios(() => suite.current, scenarios);

  it('refuses a preflight from an unlisted origin like any request without a token', async () => {
    const answer = await runScenario(suite.current, {
      name: 'an unlisted preflight',
      method: 'OPTIONS',
      url: '/users',
      headers: { origin: STRANGER, 'access-control-request-method': 'POST' },
      expectedStatus: 401,
      expectedProblem: {},
    });
    assertNoCors(answer, 'unlisted preflight');
  });

  it('still answers a plain OPTIONS itself (204 and Allow), with CORS headers for a listed origin', async () => {
    await runScenario(suite.current, {
      name: 'a plain OPTIONS',
      method: 'OPTIONS',
      url: '/users',
      headers: { origin: APP, authorization: `Bearer ${READ}` },
      expectedStatus: 204,
      expectedHeaders: {
        allow: 'GET, POST, HEAD, OPTIONS',
        'access-control-allow-origin': APP,
        // Not a preflight answer.
        'access-control-allow-methods': null,
      },
    });
  });

  it('sends no CORS headers to a request without Origin', async () => {
    const answer = await call(suite.current.app, 'GET', '/users', { headers: { authorization: `Bearer ${READ}` } });
    assert.equal(answer.status, 200);
    assertNoCors(answer, 'no Origin');
  });
});

describe('CORS for any origin (CORS_ORIGINS=*)', () => {
  const suite = appForSuite({ CORS_ORIGINS: '*' });

  it('allows any origin with *, on answers and on preflights', async () => {
    const { app } = suite.current;
    for (const origin of [APP, STRANGER, 'http://localhost:8080']) {
      const answer = await call(app, 'GET', '/users', { headers: { origin } });
      assert.equal(answer.status, 200);
      assert.equal(answer.headers.get('access-control-allow-origin'), '*');
      assert.ok(list(answer.headers.get('access-control-expose-headers')).includes('etag'));
      const preflight = await call(app, 'OPTIONS', '/users/1', {
        headers: { origin, 'access-control-request-method': 'DELETE' },
      });
      assert.equal(preflight.status, 204);
      assert.equal(preflight.headers.get('access-control-allow-origin'), '*');
      assert.ok(list(preflight.headers.get('access-control-allow-methods')).includes('delete'));
    }
  });

  it('answers an OPTIONS with an empty Origin as one without it (found by the fuzz suite)', async () => {
    const answer = await call(suite.current.app, 'OPTIONS', '/users/1', {
      headers: { origin: '', 'access-control-request-method': 'DELETE' },
    });
    assert.equal(answer.status, 204, answer.text);
    assert.equal(answer.headers.get('access-control-allow-origin'), null);
    assert.match(answer.headers.get('allow') ?? '', /DELETE/);
  });
});

describe('CORS in a real browser: a page on a listed origin uses the API with a token', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  let api = '';
  let pageOrigin = '';
  let context: BrowserContext | undefined;

  before(async () => {
    if (!existsSync(CHROMIUM)) return;
    // The page's own server: another port is another origin.
    const pages = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>app</title>');
    });
    await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => pages.close(() => resolve())));
    pageOrigin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;

    const data = tempDir();
    cleanups.push(data.cleanup);
    const server = await startServer({
      DATABASE_URL: join(data.dir, 'users.db'),
      CORS_ORIGINS: pageOrigin,
      API_TOKENS: `read:${READ},write:${WRITE}`,
    });
    cleanups.push(async () => void (await server.stop()));
    api = server.url;

    const profile = tempDir('user-records-chromium-');
    cleanups.push(profile.cleanup);
    context = await chromium.launchPersistentContext(profile.dir, { executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    cleanups.push(async () => await context?.close());
  });

  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  /** Runs a POST (which needs a preflight: JSON body and Authorization) from a page at `origin`. */
  async function postFrom(page: Page, origin: string) {
    await page.goto(`${origin}/`);
    return page.evaluate(
      async ({ api, token }) => {
        try {
          const response = await fetch(`${api}/users`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ name: 'Browser', age: 30, city: 'Oslo' }),
          });
          const { status, headers } = response;
          return { status, location: headers.get('location'), etag: headers.get('etag'), body: await response.text() };
        } catch (error) {
          return { blocked: String(error) };
        }
      },
      { api, token: WRITE },
    );
  }

  it('lets the listed origin create a record and read ETag and Location; blocks another origin', async (t) => {
    if (!existsSync(CHROMIUM) && process.env.CI !== 'true') {
      t.skip(`Chromium is not installed at ${CHROMIUM}`);
      return;
    }
    assert.ok(context !== undefined, 'the browser did not start');
    const page = context.pages()[0] ?? (await context.newPage());
    const allowed = await postFrom(page, pageOrigin);
    assert.equal(allowed.status, 200, JSON.stringify(allowed));
    assert.match(allowed.location ?? '', /^\/users\/\d+$/);
    assert.ok(allowed.etag, 'the exposed ETag is not readable');
    assert.deepEqual(JSON.parse(allowed.body ?? '{}'), { data: [{ name: 'Browser', age: '30', city: 'Oslo' }] });

    // localhost and 127.0.0.1 are different origins; only the latter is listed.
    const other = await postFrom(page, pageOrigin.replace('127.0.0.1', 'localhost'));
    assert.match(other.blocked ?? '', /Failed to fetch/, JSON.stringify(other));
  });
});
