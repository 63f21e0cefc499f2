import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { appForSuite, startApp } from '../helpers/app.ts';
import { assertProblem } from '../helpers/http.ts';
import { sendRaw } from '../helpers/raw-http.ts';

// The request path before any route runs (src/http/gate.ts), in process: every refusal carries the
// security headers and counts against the rate limit, whatever the route, and the refusals of the
// outside attack runs (DNS rebinding, cross-site writes, two Host headers, Expect before a 403).

const READ = 'read-token-path-4b7d9e2a6c1f8305-xq';
const WRITE = 'write-token-path-8e1c5a9d3b7f2604-zr';

/** The headers every answer carries, refusals before any route included. */
function assertCarried(headers: Headers | Record<string, unknown>, what: string): void {
  const get = (name: string) =>
    headers instanceof Headers ? headers.get(name) : ((headers[name] as string | undefined) ?? null);
  assert.equal(get('content-security-policy'), "default-src 'none';frame-ancestors 'none'", `${what}: CSP`);
  assert.equal(get('x-content-type-options'), 'nosniff', `${what}: nosniff`);
  assert.equal(get('x-frame-options'), 'DENY', `${what}: X-Frame-Options`);
  assert.equal(get('referrer-policy'), 'no-referrer', `${what}: Referrer-Policy`);
}

/** One path of each kind of route. */
const ROUTES = [
  { kind: 'collection', path: '/users', rateLimited: true, needsToken: true },
  { kind: 'item', path: '/users/1', rateLimited: true, needsToken: true },
  { kind: 'liveness', path: '/healthz', rateLimited: false, needsToken: false },
  { kind: 'readiness', path: '/readyz', rateLimited: false, needsToken: false },
  { kind: 'metrics', path: '/metrics', rateLimited: false, needsToken: true },
  { kind: 'OpenAPI document', path: '/openapi.json', rateLimited: true, needsToken: false },
  { kind: 'unknown path', path: '/nothing-here', rateLimited: true, needsToken: true },
] as const;

describe('every early refusal carries the security headers, on every kind of route', () => {
  const suite = appForSuite({ API_TOKENS: `read:${READ},write:${WRITE}`, RATE_LIMIT: '1000' });
  const bearer = { authorization: `Bearer ${READ}` };

  for (const route of ROUTES) {
    it(`${route.kind} (${route.path})`, async () => {
      const { app, url } = suite.current;
      const refusals: Array<{
        what: string;
        status: number;
        answer: () => Promise<{ status: number; headers: Headers | Record<string, unknown> }>;
      }> = [
        {
          what: 'a query that is not valid percent-encoding',
          // On a path no route serves, that is the first fault: 404.
          status: route.kind === 'unknown path' ? 404 : 400,
          answer: () =>
            app
              .inject({ method: 'GET', url: `${route.path}?x=%ZZ`, headers: bearer })
              .then((r) => ({ status: r.statusCode, headers: r.headers })),
        },
        {
          what: 'a path that is not valid percent-encoding',
          status: 400,
          answer: () =>
            sendRaw(
              url,
              Buffer.from(`GET ${route.path}%E0%A4%A HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`),
            ),
        },
        {
          what: 'a URL over 8 KiB',
          status: 414,
          answer: () =>
            app
              .inject({ method: 'GET', url: `${route.path}?x=${'a'.repeat(9000)}`, headers: bearer })
              .then((r) => ({ status: r.statusCode, headers: r.headers })),
        },
        {
          what: 'headers over 16 KiB',
          status: 431,
          answer: () =>
            sendRaw(
              url,
              Buffer.from(
                `GET ${route.path} HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'b'.repeat(17_000)}\r\nConnection: close\r\n\r\n`,
              ),
            ),
        },
        {
          what: 'no Host header in HTTP/1.1',
          status: 400,
          answer: () => sendRaw(url, Buffer.from(`GET ${route.path} HTTP/1.1\r\nConnection: close\r\n\r\n`)),
        },
        {
          what: 'two Host headers',
          status: 400,
          answer: () =>
            sendRaw(
              url,
              Buffer.from(
                `GET ${route.path} HTTP/1.1\r\nHost: localhost\r\nHost: localhost\r\nConnection: close\r\n\r\n`,
              ),
            ),
        },
        {
          what: 'a Host this service does not answer to (DNS rebinding)',
          status: 421,
          answer: () =>
            app
              .inject({ method: 'GET', url: route.path, headers: { ...bearer, host: 'rebind.evil.example' } })
              .then((r) => ({ status: r.statusCode, headers: r.headers })),
        },
      ];
      if (route.needsToken) {
        refusals.push({
          what: 'no token',
          status: 401,
          answer: () =>
            app.inject({ method: 'GET', url: route.path }).then((r) => ({ status: r.statusCode, headers: r.headers })),
        });
      }
      for (const refusal of refusals) {
        const answer = await refusal.answer();
        assert.equal(answer.status, refusal.status, `${route.path}, ${refusal.what}`);
        assertCarried(answer.headers, `${route.path}, ${refusal.what}`);
      }
    });
  }

  it('a malformed query on a route that needs a token is refused for the missing token first (401, not 400)', async () => {
    const answer = await suite.current.app.inject({ method: 'GET', url: '/metrics?x=%ZZ' });
    assert.equal(answer.statusCode, 401);
  });
});

describe('429 and 503 carry the security headers too', () => {
  it('429: over the rate limit, on every rate-limited kind of route', async () => {
    const { app, close } = await startApp({ RATE_LIMIT: '1' });
    try {
      for (const route of ROUTES.filter((row) => row.rateLimited)) {
        // Each inject comes from its own address, so each route starts with a fresh budget.
        const remoteAddress = `192.0.2.${ROUTES.indexOf(route) + 1}`;
        await app.inject({ method: 'GET', url: route.path, remoteAddress });
        const answer = await app.inject({ method: 'GET', url: route.path, remoteAddress });
        assert.equal(answer.statusCode, 429, route.path);
        assertCarried(answer.headers, `${route.path} 429`);
        assert.ok(Number(answer.headers['retry-after']) >= 1);
      }
    } finally {
      await close();
    }
  });

  it('503: while the event loop runs late, on every kind of route that is shed', async () => {
    // Shedding at its default, which startApp otherwise raises out of reach.
    const { app, close } = await startApp({ OVERLOAD_LAG_MS: '500' });
    try {
      // Hold the event loop well past OVERLOAD_LAG_MS (500 ms): the overload check's tick is overdue.
      const until = performance.now() + 800;
      while (performance.now() < until);
      for (const route of ROUTES.filter((row) => row.kind !== 'liveness' && row.kind !== 'metrics')) {
        const answer = await app.inject({ method: 'GET', url: route.path });
        assert.equal(answer.statusCode, 503, route.path);
        assert.equal(answer.json().type, '/problems/overloaded');
        assertCarried(answer.headers, `${route.path} 503`);
      }
      assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200, 'liveness is never shed');
    } finally {
      await close();
    }
  });
});

describe('every request counts against the rate limit, early refusals and preflights included', () => {
  for (const [what, send] of [
    [
      'requests without Host',
      (url: string) => sendRaw(url, Buffer.from('GET /users HTTP/1.1\r\nConnection: close\r\n\r\n')),
    ],
    [
      'URLs that cannot be decoded',
      (url: string) =>
        sendRaw(url, Buffer.from('GET /users%E0%A4%A HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')),
    ],
    ['unparsable HTTP', (url: string) => sendRaw(url, Buffer.from('GET /users HTTP/1.1\r\nHost localhost\r\n\r\n'))],
  ] as const) {
    it(what, async () => {
      const { url, app, close } = await startApp({ RATE_LIMIT: '3' });
      try {
        for (let i = 0; i < 3; i++) assert.ok((await send(url)).status >= 400);
        const next = await app.inject({ method: 'GET', url: '/users', remoteAddress: '127.0.0.1' });
        assert.equal(next.statusCode, 429, 'the refused requests were not counted');
      } finally {
        await close();
      }
    });
  }

  it('CORS preflights', async () => {
    const { app, close } = await startApp({ RATE_LIMIT: '3', CORS_ORIGINS: 'https://app.example.com' });
    try {
      const preflight = { origin: 'https://app.example.com', 'access-control-request-method': 'POST' };
      for (let i = 0; i < 3; i++) {
        assert.equal((await app.inject({ method: 'OPTIONS', url: '/users', headers: preflight })).statusCode, 204);
      }
      assert.equal((await app.inject({ method: 'GET', url: '/users' })).statusCode, 429);
    } finally {
      await close();
    }
  });
});

describe('the Host a request names (DNS rebinding)', () => {
  it('by default: the loopback names and the listen address, with any port; others 421', async () => {
    const { app, close } = await startApp();
    try {
      for (const host of ['localhost', 'localhost:3000', '127.0.0.1:8080', '[::1]:3000', 'LOCALHOST']) {
        assert.equal((await app.inject({ method: 'GET', url: '/users', headers: { host } })).statusCode, 200, host);
      }
      for (const host of ['rebind.evil.example', 'rebind.evil.example:3000', '10.0.0.1', 'localhost.evil.example']) {
        const answer = await app.inject({ method: 'GET', url: '/users', headers: { host } });
        assert.equal(
          assertProblem(
            {
              status: answer.statusCode,
              headers: new Headers(answer.headers as Record<string, string>),
              text: answer.body,
              json: answer.json(),
            },
            421,
          ).type,
          '/problems/misdirected-request',
          host,
        );
      }
    } finally {
      await close();
    }
  });

  it('ALLOWED_HOSTS names them instead; * allows any', async () => {
    const named = await startApp({ ALLOWED_HOSTS: 'users.example.com' });
    try {
      assert.equal(
        (await named.app.inject({ method: 'GET', url: '/users', headers: { host: 'users.example.com' } })).statusCode,
        200,
      );
      assert.equal(
        (await named.app.inject({ method: 'GET', url: '/users', headers: { host: 'localhost' } })).statusCode,
        421,
      );
    } finally {
      await named.close();
    }
    const any = await startApp({ ALLOWED_HOSTS: '*' });
    try {
      assert.equal(
        (await any.app.inject({ method: 'GET', url: '/users', headers: { host: 'whatever.example' } })).statusCode,
        200,
      );
    } finally {
      await any.close();
    }
  });
});

// RFC 9112 (3.2.2): a target in absolute form names the host, and the Host header is ignored.
describe('a request target in absolute form (GET http://host/path) is checked like a Host header', () => {
  const CASES: ReadonlyArray<{ target: string; host?: string; allowed?: string; status: number; type?: string }> = [
    { target: 'http://other.example/users', status: 421, type: '/problems/misdirected-request' },
    { target: 'http://other.example:3000/users', status: 421, type: '/problems/misdirected-request' },
    { target: 'http://other.example', status: 421, type: '/problems/misdirected-request' },
    { target: 'https://other.example/users', status: 421, type: '/problems/misdirected-request' },
    { target: 'HTTP://OTHER.EXAMPLE/users', status: 421, type: '/problems/misdirected-request' },
    { target: 'ftp://127.0.0.1/users', status: 421, type: '/problems/misdirected-request' },
    { target: 'http://localhost.other.example/users', status: 421, type: '/problems/misdirected-request' },
    // The target's host wins over Host, both ways.
    { target: 'http://other.example/users', host: 'other.example', status: 421 },
    { target: 'http://127.0.0.1/users', host: 'rebind.evil.example', status: 200 },
    // userinfo is deprecated and a known way to confuse which host is meant (RFC 9110, 4.2.4).
    { target: 'http://a@other.example/users', status: 400, type: '/problems/malformed-request' },
    { target: 'http://a@127.0.0.1/users', status: 400, type: '/problems/malformed-request' },
    { target: 'http://127.0.0.1:1@other.example/users', status: 400, type: '/problems/malformed-request' },
    { target: 'http:///users', status: 400, type: '/problems/malformed-request' },
    { target: 'http://127.0.0.1%2fother.example/users', status: 400, type: '/problems/malformed-request' },
    { target: 'http://127.0.0.1:99999/users', status: 400, type: '/problems/malformed-request' },
    // A Host that is not a host and a port up to 65535 is malformed, as RFC 9110 (7.2) has it.
    { target: '/users', host: '127.0.0.1:abc', status: 400, type: '/problems/malformed-request' },
    { target: '/users', host: '127.0.0.1:99999', status: 400, type: '/problems/malformed-request' },
    { target: '/users', host: 'local host', status: 400, type: '/problems/malformed-request' },
    { target: '/users', host: '127.0.0.1:65535', status: 200 },
    { target: '/users', host: 'localhost:', status: 200 },
    // Allowed hosts route as the same path would.
    { target: 'http://127.0.0.1:{port}/users', status: 200 },
    { target: 'HTTP://127.0.0.1:{port}/users', status: 200 },
    { target: 'http://LOCALHOST/users?limit=1', status: 200 },
    { target: 'http://localhost./users', status: 200 },
    { target: 'https://localhost/users', status: 200 },
    { target: 'http://[::1]:3000/users', status: 200 },
    { target: 'http://localhost/nothing-here', status: 404 },
    // Not absolute form: a path of this service that starts with two slashes, never another host.
    { target: '//other.example/users', status: 404 },
    // ALLOWED_HOSTS=* answers any host, in the target as in Host; userinfo is still refused.
    { target: 'http://other.example/users', allowed: '*', status: 200 },
    { target: 'http://a@other.example/users', allowed: '*', status: 400 },
    { target: 'http://users.example.com/users', host: 'localhost', allowed: 'users.example.com', status: 200 },
    { target: 'http://localhost/users', host: 'users.example.com', allowed: 'users.example.com', status: 421 },
  ];

  for (const allowed of [undefined, '*', 'users.example.com']) {
    it(`ALLOWED_HOSTS ${allowed ?? 'by default'}`, async () => {
      const { url, close } = await startApp(allowed === undefined ? {} : { ALLOWED_HOSTS: allowed });
      try {
        const port = new URL(url).port;
        for (const { target, host = 'localhost', status, type } of CASES.filter((c) => c.allowed === allowed)) {
          const line = target.replace('{port}', port);
          const answer = await sendRaw(
            url,
            Buffer.from(`GET ${line} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`),
          );
          assert.equal(answer.status, status, `${line} (Host: ${host}): ${answer.wire}`);
          if (type !== undefined) assert.equal(assertProblem(answer, status).type, type, line);
          if (status === 200) assert.ok(Array.isArray((answer.json as { data?: unknown }).data), line);
        }
      } finally {
        await close();
      }
    });
  }

  it('a change with an allowed absolute target is stored as through a path; another host changes nothing', async () => {
    const { url, store, close } = await startApp();
    try {
      const post = (target: string) =>
        sendRaw(
          url,
          Buffer.from(`POST ${target} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`),
        );
      assert.equal((await post('http://other.example/users?name=Eve&age=1&city=X')).status, 421);
      assert.equal(await store.count(), 0);
      assert.equal((await post('http://localhost/users?name=Ada&age=36&city=London')).status, 200);
      assert.equal(await store.count(), 1);
    } finally {
      await close();
    }
  });
});

describe('changes sent from another site’s page', () => {
  const suite = appForSuite();
  const post = (headers: Record<string, string>, payload?: string) =>
    suite.current.app.inject({
      method: 'POST',
      url: payload === undefined ? '/users?name=Mallory&age=1&city=Evil' : '/users',
      headers: { host: 'localhost:3000', ...headers },
      payload,
    });

  for (const [what, headers, payload] of [
    [
      'a form that posts here',
      { origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
      'name=Mallory&age=1&city=Evil',
    ],
    ['a fetch with a text/plain body', { origin: 'https://evil.example', 'content-type': 'text/plain' }, undefined],
    ['Origin: null (a sandboxed page)', { origin: 'null' }, undefined],
    ['Sec-Fetch-Site: cross-site without Origin', { 'sec-fetch-site': 'cross-site' }, undefined],
  ] as const) {
    it(`${what}: 403 and nothing stored`, async () => {
      const answer = await post({ ...headers }, payload);
      assert.equal(answer.statusCode, 403, answer.body);
      assert.equal(answer.json().type, '/problems/cross-origin-write');
      const listed = await suite.current.app.inject({ method: 'GET', url: '/users?name=Mallory' });
      assert.deepEqual(listed.json(), { data: [] });
    });
  }

  it('the service’s own origin, programs that send no Origin, and reads from anywhere pass', async () => {
    assert.equal((await post({ origin: 'http://localhost:3000' })).statusCode, 200);
    assert.equal((await post({ 'sec-fetch-site': 'same-origin' })).statusCode, 200);
    assert.equal((await post({})).statusCode, 200);
    const read = await suite.current.app.inject({
      method: 'GET',
      url: '/users',
      headers: { origin: 'https://evil.example' },
    });
    assert.equal(read.statusCode, 200);
  });

  it('an origin listed in CORS_ORIGINS may change records', async () => {
    const { app, close } = await startApp({ CORS_ORIGINS: 'https://app.example.com' });
    try {
      const answer = await app.inject({
        method: 'POST',
        url: '/users?name=Ann&age=1&city=Here',
        headers: { origin: 'https://app.example.com' },
      });
      assert.equal(answer.statusCode, 200);
    } finally {
      await close();
    }
  });
});

describe('smaller findings', () => {
  const suite = appForSuite({ API_TOKENS: `read:${READ},write:${WRITE}` });

  it('a 404 does not repeat the path it was asked for', async () => {
    const answer = await suite.current.app.inject({
      method: 'GET',
      url: '/people/ada.lovelace@example.com',
      headers: { authorization: `Bearer ${READ}` },
    });
    assert.equal(answer.statusCode, 404);
    assert.ok(!answer.body.includes('lovelace'), answer.body);
  });

  it('Expect: 100-continue is answered 100 only once the request may go on: a read token on a write gets 403 at once', async () => {
    const head = (token: string) =>
      Buffer.from(
        `POST /users HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 40\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
      );
    const refused = await sendRaw(suite.current.url, head(READ));
    assert.equal(refused.status, 403);
    assert.ok(!refused.wire.startsWith('HTTP/1.1 100'), `a 100 came before the 403:\n${refused.wire}`);
    // A write token gets the 100 (and then, as no body follows, a 408 or a close; the 100 is what counts).
    const allowed = await sendRaw(suite.current.url, head(WRITE), 3000).catch(() => undefined);
    assert.ok(allowed === undefined || allowed.wire.startsWith('HTTP/1.1 100'), allowed?.wire);
  });

  it('a read token may use OPTIONS (it shows only which methods a path serves)', async () => {
    const answer = await suite.current.app.inject({
      method: 'OPTIONS',
      url: '/users',
      headers: { authorization: `Bearer ${READ}` },
    });
    assert.equal(answer.statusCode, 204);
  });
});
