import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { type JWTPayload, SignJWT, UnsecuredJWT } from 'jose';
import { appForSuite, startApp } from '../helpers/app.ts';
import { runCli } from '../helpers/cli.ts';
import { freePort } from '../helpers/free-port.ts';
import { assertProblem, call, type Target } from '../helpers/http.ts';
import { type JwksMode, type JwksServer, sign, signingKey, signRaw, startJwksServer } from '../helpers/jwks-server.ts';
import { assertNotLogged } from '../helpers/log-check.ts';
import { runScenario, runScenarios, type Scenario } from '../helpers/scenario.ts';
import { type RunningServer, startServer, tempDir } from '../helpers/server.ts';

const ISSUER = 'https://id.example.test/realms/staff';
const AUDIENCE = 'user-records-api';
const API_READ = 'api-read-token-7c1e9b4d2a8f6053-beside';
const JWT_ENV = { JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, API_TOKENS: `read:${API_READ}` };

const now = () => Math.floor(Date.now() / 1000);
/** Claims the service accepts, but for the scope: valid for an hour. */
const claims = (extra: JWTPayload = {}): JWTPayload => ({
  iss: ISSUER,
  aud: AUDIENCE,
  sub: 'person-1',
  iat: now(),
  exp: now() + 3600,
  ...extra,
});
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

// The provider's keys, one of each family the service allows; the RS256 one is also JWT_PUBLIC_KEY.
const rs = await signingKey('rs-1', 'RS256');
const ps = await signingKey('ps-1', 'PS256');
const es = await signingKey('es-1', 'ES256');
const ed = await signingKey('ed-1', 'EdDSA');
/** Someone else's key: signs whatever it likes, under any kid. */
const attacker = await signingKey('rs-1', 'RS256');

const provider = await startJwksServer([rs.publicJwk, ps.publicJwk, es.publicJwk, ed.publicJwk]);
/** Where a token's jku or x5u points: it must never be asked. */
const elsewhere = await startJwksServer([attacker.publicJwk]);
after(async () => {
  await provider.close();
  await elsewhere.close();
});
const pemFiles = tempDir('user-records-jwt-');
after(pemFiles.cleanup);
const pemPath = join(pemFiles.dir, 'provider.pem');
writeFileSync(pemPath, rs.publicPem);

const READ = await sign(rs, claims({ scope: 'openid users:read profile' }));
const WRITE = await sign(rs, claims({ scope: 'users:write' }));
const NO_SCOPE = await sign(rs, claims({ scope: 'openid profile' }));
const signedRead = (header: Record<string, unknown>, by = attacker) =>
  sign(by, claims({ scope: 'users:read' }), header);
const [head, , signature] = READ.split('.');

/** kids that look like paths or URLs, on tokens signed by someone else: looked up as names, never followed. */
const KID_TRICKS = await Promise.all(
  ['../../../../etc/passwd', '/jwks.json', '..%2F..%2Fadmin', 'rs-1/../rs-1', 'rs-1\u0000', 'http://127.0.0.1:1/x'].map(
    async (kid) => ({ name: `kid ${JSON.stringify(kid)}`, token: await signedRead({ kid }) }),
  ),
);

/** Each known attack, and the reason the 401's `error_description` must give (when a fixed one). */
const ATTACKS: ReadonlyArray<{ name: string; token: string; reason?: RegExp }> = [
  { name: 'alg none', token: new UnsecuredJWT(claims({ scope: 'users:write' })).encode(), reason: /algorithm/ },
  {
    name: 'alg none with the kid of a real key and the signature of a real token',
    token: `${b64({ alg: 'none', kid: 'rs-1' })}.${b64(claims({ scope: 'users:write' }))}.${signature}`,
    reason: /algorithm/,
  },
  {
    name: 'alg "None"',
    token: `${b64({ alg: 'None' })}.${b64(claims({ scope: 'users:write' }))}.`,
    reason: /algorithm/,
  },
  {
    name: 'HS256 signed with the public key as PEM text',
    token: await new SignJWT(claims({ scope: 'users:write' }))
      .setProtectedHeader({ alg: 'HS256', kid: 'rs-1' })
      .sign(new TextEncoder().encode(rs.publicPem)),
    reason: /algorithm/,
  },
  {
    name: 'HS256 signed with the public key as JWK JSON',
    token: await new SignJWT(claims({ scope: 'users:write' }))
      .setProtectedHeader({ alg: 'HS256', kid: 'rs-1' })
      .sign(new TextEncoder().encode(JSON.stringify(rs.publicJwk))),
    reason: /algorithm/,
  },
  {
    name: 'an embedded jwk header with the signer’s own key (kid of a real key)',
    token: await signedRead({ jwk: attacker.publicJwk }),
  },
  {
    name: 'an embedded jwk header and no kid',
    token: await signedRead({ kid: undefined, jwk: attacker.publicJwk }),
  },
  {
    name: 'a jku header pointing elsewhere',
    token: await signedRead({ kid: 'elsewhere-1', jku: `${elsewhere.url}/jwks.json` }),
  },
  {
    name: 'an x5u header pointing elsewhere',
    token: await signedRead({ kid: 'elsewhere-2', x5u: `${elsewhere.url}/cert.pem` }),
  },
  { name: 'another key under the kid of a real one', token: await signedRead({}), reason: /signature/ },
  {
    name: 'expired beyond the clock skew',
    token: await sign(rs, claims({ scope: 'users:read', exp: now() - 120 })),
    reason: /expired/,
  },
  {
    name: 'nbf in the future beyond the clock skew',
    token: await sign(rs, claims({ scope: 'users:read', nbf: now() + 120 })),
    reason: /not valid yet/,
  },
  {
    name: 'no exp',
    token: await sign(rs, { iss: ISSUER, aud: AUDIENCE, scope: 'users:read' }),
    reason: /expiry/,
  },
  {
    name: 'a wrong iss',
    token: await sign(rs, claims({ scope: 'users:read', iss: 'https://id.example.test/realms/other' })),
    reason: /issuer/,
  },
  {
    name: 'a wrong aud',
    token: await sign(rs, claims({ scope: 'users:read', aud: 'another-api' })),
    reason: /audience/,
  },
  {
    name: 'aud a list without ours',
    token: await sign(rs, claims({ scope: 'users:read', aud: ['another-api', 'a-third'] })),
    reason: /audience/,
  },
  {
    name: 'a tampered payload (read token raised to write)',
    token: `${head}.${b64(claims({ scope: 'users:write' }))}.${signature}`,
    reason: /signature/,
  },
  { name: 'a truncated signature', token: READ.slice(0, -6) },
  { name: 'no signature part', token: READ.split('.').slice(0, 2).join('.'), reason: /neither/ },
  { name: 'an empty signature', token: `${READ.split('.').slice(0, 2).join('.')}.` },
  { name: 'cut inside the header', token: READ.slice(0, 12), reason: /neither/ },
  {
    name: 'a header that is not JSON',
    token: `${Buffer.from('{alg').toString('base64url')}.${READ.split('.')[1]}.${signature}`,
    reason: /malformed/,
  },
  {
    name: 'an unknown critical header',
    token: signRaw(rs, { alg: 'RS256', kid: 'rs-1', crit: ['x-must'], 'x-must': 1 }, claims({ scope: 'users:read' })),
    reason: /malformed/,
  },
  { name: 'an 8 KB kid (under the header limit)', token: await signedRead({ kid: 'k'.repeat(8000) }) },
  ...KID_TRICKS,
];

const ATTACK_ROWS = ATTACKS;

const SECRET_TOKENS = [READ, WRITE, NO_SCOPE, ...ATTACK_ROWS.map((row) => row.token)];

/** Every attack as a scenario: 401 problem details naming why, never the token itself. */
const ATTACK_SCENARIOS: readonly Scenario[] = [
  ...ATTACK_ROWS.map((row): Scenario => ({
    name: `401 for ${row.name}`,
    method: 'GET',
    url: '/users',
    headers: bearer(row.token),
    expectedStatus: 401,
    expectedProblem: { type: '/problems/unauthorized' },
    expectedHeaders: {
      'www-authenticate': new RegExp(
        `^Bearer realm="user-records", error="invalid_token", error_description="[^"\\\\]*${row.reason?.source ?? ''}[^"\\\\]*"$`,
      ),
    },
    notExpectedContent: [row.token.slice(0, 40), row.token.slice(-40)],
  })),
  {
    name: '431 for a token past the header limit',
    method: 'GET',
    url: '/users',
    headers: bearer(`${head}.${'A'.repeat(20_000)}.${signature}`),
    socket: true,
    expectedStatus: 431,
    expectedProblem: { type: '/problems/headers-too-large' },
  },
  {
    name: '403 for a valid token with neither scope, on a read',
    method: 'GET',
    url: '/users',
    headers: bearer(NO_SCOPE),
    expectedStatus: 403,
    expectedProblem: { type: '/problems/forbidden' },
    expectedHeaders: {
      'www-authenticate': 'Bearer realm="user-records", error="insufficient_scope", scope="users:read"',
    },
  },
  {
    name: '403 for a read token on a write, nothing stored',
    method: 'POST',
    url: '/users?name=Nope&age=1&city=Nowhere',
    headers: bearer(READ),
    expectedStatus: 403,
    expectedProblem: { type: '/problems/forbidden' },
    expectedHeaders: {
      'www-authenticate': 'Bearer realm="user-records", error="insufficient_scope", scope="users:write"',
    },
  },
];

const status = async (target: Target, method: string, path: string, token: string) =>
  (await call(target, method, path, { headers: bearer(token) })).status;

/** The two ways the service learns the provider's keys; the RS256 key is the one both know. */
const SOURCES: ReadonlyArray<{ name: string; env: Record<string, string> }> = [
  { name: 'JWT_JWKS_URL', env: { JWT_JWKS_URL: `${provider.url}/jwks.json` } },
  { name: 'JWT_PUBLIC_KEY as PEM text', env: { JWT_PUBLIC_KEY: rs.publicPem } },
  { name: 'JWT_PUBLIC_KEY as a path', env: { JWT_PUBLIC_KEY: pemPath } },
];

for (const source of SOURCES) {
  describe(`JWT with ${source.name}`, () => {
    const suite = appForSuite({ ...JWT_ENV, ...source.env });

    it('lets a read token read and a write token write; /auth/scope says which', async () => {
      const { app } = suite.current;
      assert.equal(await status(app, 'GET', '/users', READ), 200);
      assert.equal(await status(app, 'HEAD', '/users', READ), 200);
      const created = await call(app, 'POST', '/users?name=Jo&age=30&city=Lima', { headers: bearer(WRITE) });
      assert.equal(created.status, 200, created.text);
      const record = created.headers.get('location') ?? '';
      assert.equal(await status(app, 'PATCH', `${record}?age=31`, WRITE), 200);
      assert.equal(await status(app, 'GET', record, WRITE), 200, 'a write token reads too');
      for (const [token, scope] of [
        [READ, 'read'],
        [WRITE, 'write'],
        [API_READ, 'read'],
      ] as const) {
        const answer = await call(app, 'GET', '/auth/scope', { headers: bearer(token) });
        assert.deepEqual(answer.json, { scope });
      }
      assert.equal(await status(app, 'GET', '/users', API_READ), 200, 'API tokens work beside JWTs');
      assert.equal(await status(app, 'POST', '/users?name=X&age=1&city=Y', API_READ), 403);
    });

    it('reads the scope claim as a space-separated string or as an array', async () => {
      const { app } = suite.current;
      const cases: ReadonlyArray<[scope: unknown, read: number, write: number]> = [
        ['users:read', 200, 403],
        ['profile users:write', 200, 200],
        [['users:read'], 200, 403],
        [['openid', 'users:write'], 200, 200],
        [['users:read users:write'], 403, 403],
        ['USERS:READ', 403, 403],
        [42, 403, 403],
        [{ 'users:write': true }, 403, 403],
      ];
      for (const [scope, read, write] of cases) {
        const token = await sign(rs, claims({ scope }));
        assert.equal(await status(app, 'GET', '/users', token), read, `GET with scope ${JSON.stringify(scope)}`);
        assert.equal(
          await status(app, 'DELETE', '/users/999999', token),
          write === 200 ? 404 : write,
          `DELETE with scope ${JSON.stringify(scope)}`,
        );
      }
    });

    it('allows the clock skew (30 s) on exp and nbf, and no more', async () => {
      const { app } = suite.current;
      const within = await sign(rs, claims({ scope: 'users:read', exp: now() - 10, nbf: now() + 10 }));
      assert.equal(await status(app, 'GET', '/users', within), 200);
      const beyond = await sign(rs, claims({ scope: 'users:read', exp: now() - 90 }));
      assert.equal(await status(app, 'GET', '/users', beyond), 401);
    });

    it('says bearerFormat JWT in the OpenAPI document', async () => {
      const doc = (await call(suite.current.app, 'GET', '/openapi.json')).json;
      assert.equal(doc.components.securitySchemes.bearerAuth.bearerFormat, 'JWT');
      assert.deepEqual(doc.security, [{ bearerAuth: [] }]);
    });

    describe('refuses the known attacks', () => {
      runScenarios(() => suite.current, ATTACK_SCENARIOS);
    });
  });
}

describe('JWT with JWT_JWKS_URL: every family of key the provider publishes', () => {
  const suite = appForSuite({ ...JWT_ENV, JWT_JWKS_URL: `${provider.url}/jwks.json` });
  for (const key of [rs, ps, es, ed]) {
    it(`accepts a token signed ${key.alg}`, async () => {
      const token = await sign(key, claims({ scope: 'users:read' }));
      assert.equal(await status(suite.current.app, 'GET', '/users', token), 200);
    });
  }

  it('refuses a real key used with another algorithm than its JWK names (RS256 key, PS256 token)', async () => {
    const token = signRaw(rs, { alg: 'PS256', kid: 'rs-1' }, claims({ scope: 'users:read' }), true);
    const answer = await call(suite.current.app, 'GET', '/users', { headers: bearer(token) });
    assertProblem(answer, 401);
    assert.match(answer.headers.get('www-authenticate') ?? '', /no key of the provider matches/);
  });

  it('asked nothing of where a token’s jku or x5u pointed, and only /jwks.json of the provider', () => {
    assert.deepEqual(elsewhere.requests, []);
    assert.ok(provider.requests.length > 0);
    assert.deepEqual(new Set(provider.requests), new Set(['/jwks.json']));
  });
});

describe('JWT with a custom scope claim and scope names (JWT_PUBLIC_KEY)', () => {
  const suite = appForSuite({
    ...JWT_ENV,
    JWT_PUBLIC_KEY: rs.publicPem,
    JWT_SCOPE_CLAIM: 'scp',
    JWT_READ_SCOPE: 'records.read',
    JWT_WRITE_SCOPE: 'records.write',
  });
  it('reads the scopes from that claim only, by those names', async () => {
    const { app } = suite.current;
    const cases: ReadonlyArray<[extra: JWTPayload, read: number, write: number]> = [
      [{ scp: ['records.read'] }, 200, 403],
      [{ scp: 'records.write' }, 200, 404],
      [{ scope: 'users:write records.write' }, 403, 403],
      [{ scp: 'users:write' }, 403, 403],
    ];
    for (const [extra, read, write] of cases) {
      const token = await sign(rs, claims(extra));
      assert.equal(await status(app, 'GET', '/users', token), read, JSON.stringify(extra));
      assert.equal(await status(app, 'DELETE', '/users/999999', token), write, JSON.stringify(extra));
    }
    const refused = await call(app, 'GET', '/users', { headers: bearer(await sign(rs, claims({ scp: 'x' }))) });
    assert.equal(
      refused.headers.get('www-authenticate'),
      'Bearer realm="user-records", error="insufficient_scope", scope="records.read"',
    );
  });
});

/** A provider of its own for a suite, started before the suite's app (declare it first) and closed after. */
function ownProvider(keys = [rs.publicJwk]): () => JwksServer {
  let server: JwksServer | undefined;
  before(async () => {
    server = await startJwksServer(keys);
  });
  after(async () => server?.close());
  return () => {
    assert.ok(server !== undefined, 'the provider has not started');
    return server;
  };
}

describe('JWT key rotation at the provider (JWT_JWKS_COOLDOWN=1s, JWT_JWKS_MAX_AGE=2s)', () => {
  it('accepts a new kid once the cooldown has passed, and refuses a removed key once the cache is older than its max age', async () => {
    const server = await startJwksServer([rs.publicJwk]);
    const app = await startApp({
      ...JWT_ENV,
      JWT_JWKS_URL: `${server.url}/jwks.json`,
      JWT_JWKS_COOLDOWN: '1s',
      JWT_JWKS_MAX_AGE: '2s',
    });
    try {
      assert.equal(await status(app.app, 'GET', '/users', READ), 200);
      assert.equal(server.requests.length, 1);
      const next = await signingKey('rs-2', 'RS256');
      server.keys = [rs.publicJwk, next.publicJwk];
      await sleep(1100);
      assert.equal(await status(app.app, 'GET', '/users', await sign(next, claims({ scope: 'users:read' }))), 200);
      assert.equal(server.requests.length, 2, 'the unknown kid made one fetch');
      server.keys = [next.publicJwk];
      await sleep(2100);
      const answer = await call(app.app, 'GET', '/users', { headers: bearer(READ) });
      assertProblem(answer, 401);
      assert.match(answer.headers.get('www-authenticate') ?? '', /no key of the provider matches/);
      assert.equal(server.requests.length, 3);
    } finally {
      await app.close();
      await server.close();
    }
  });
});

// Providers in the middle of a rotation may publish two keys a token could be checked with: tokens
// without a kid (providers with one key often omit it), or one kid on two keys. Each is tried.
const rsNext = await signingKey('rs-next', 'RS256');
const rsTwin = await signingKey('rs-1', 'RS256');

describe('JWT: several keys of the provider fit the token (a rotation)', () => {
  const provide = ownProvider([rs.publicJwk, rsNext.publicJwk, rsTwin.publicJwk]);
  const suite = appForSuite(() => ({ ...JWT_ENV, JWT_JWKS_URL: `${provide().url}/jwks.json` }));
  const read = claims({ scope: 'users:read' });
  const cases: ReadonlyArray<{ name: string; token: () => Promise<string>; status: number; reason?: RegExp }> = [
    { name: 'no kid, signed by the first key', token: () => sign(rs, read, { kid: undefined }), status: 200 },
    { name: 'no kid, signed by the second key', token: () => sign(rsNext, read, { kid: undefined }), status: 200 },
    { name: 'a kid two keys share, signed by the second', token: () => sign(rsTwin, read), status: 200 },
    { name: 'a kid two keys share, signed by the first', token: () => sign(rs, read), status: 200 },
    {
      name: 'no kid, signed by a key the provider does not publish',
      token: () => sign(attacker, read, { kid: undefined }),
      status: 401,
      reason: /the signature does not verify/,
    },
    {
      name: 'a kid two keys share, signed by neither',
      token: () => sign(attacker, read),
      status: 401,
      reason: /the signature does not verify/,
    },
    {
      name: 'no kid, the right key, but expired',
      token: () => sign(rsNext, claims({ scope: 'users:read', exp: now() - 3600 }), { kid: undefined }),
      status: 401,
      reason: /expired/,
    },
  ];
  for (const row of cases) {
    it(`${row.name}: ${row.status}`, async () => {
      const answer = await call(suite.current.app, 'GET', '/users', { headers: bearer(await row.token()) });
      assert.equal(answer.status, row.status, answer.text);
      if (row.reason !== undefined) assert.match(answer.headers.get('www-authenticate') ?? '', row.reason);
    });
  }
});

describe('JWT: a flood of unknown kids (JWT_JWKS_COOLDOWN=1h)', () => {
  const provide = ownProvider();
  const suite = appForSuite(() => ({
    ...JWT_ENV,
    JWT_JWKS_URL: `${provide().url}/jwks.json`,
    JWT_JWKS_COOLDOWN: '1h',
  }));

  it('fetches the keys once, whatever kids arrive, cold or warm; a removed key stays valid while cached', async () => {
    const { app } = suite.current;
    const unknown = (i: number) => signedRead({ kid: `unknown-${i}-${Math.random().toString(36).slice(2)}` });
    // Cold: they all arrive before any key is known.
    const cold = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => status(app, 'GET', '/users', await unknown(i))),
    );
    assert.deepEqual(new Set(cold), new Set([401]));
    assert.equal(await status(app, 'GET', '/users', READ), 200);
    for (let batch = 0; batch < 5; batch++) {
      const warm = await Promise.all(
        Array.from({ length: 40 }, async (_, i) => status(app, 'GET', '/users', await unknown(batch * 40 + i))),
      );
      assert.deepEqual(new Set(warm), new Set([401]));
    }
    assert.equal(provide().requests.length, 1, `the provider was asked ${provide().requests.length} times`);
    provide().keys = [];
    assert.equal(await status(app, 'GET', '/users', READ), 200, 'within JWT_JWKS_MAX_AGE the cached key is used');
    assert.equal(provide().requests.length, 1);
  });
});

/** How each kind of trouble at the provider is answered: never 500, never a token taken unchecked. */
const TROUBLE: ReadonlyArray<{ mode: JwksMode | 'down'; status: number }> = [
  { mode: 'down', status: 503 },
  { mode: 'error', status: 503 },
  { mode: 'garbage', status: 503 },
  { mode: 'no-keys', status: 503 },
  { mode: 'slow', status: 503 },
  { mode: 'redirect', status: 503 },
  { mode: 'huge', status: 503 },
];

describe('JWT when the provider is in trouble (JWT_JWKS_TIMEOUT_MS=500, JWT_JWKS_COOLDOWN=1h)', () => {
  for (const trouble of TROUBLE) {
    it(`${trouble.mode}: ${trouble.status}, and the provider asked at most once for 10 requests`, async () => {
      const server = await startJwksServer([rs.publicJwk]);
      if (trouble.mode !== 'down') server.mode = trouble.mode;
      const url =
        trouble.mode === 'down' ? `http://127.0.0.1:${await freePort()}/jwks.json` : `${server.url}/jwks.json`;
      const app = await startApp({
        ...JWT_ENV,
        JWT_JWKS_URL: url,
        JWT_JWKS_TIMEOUT_MS: '500',
        JWT_JWKS_COOLDOWN: '1h',
      });
      try {
        for (let i = 0; i < 10; i++) {
          const answer = await call(app.app, 'GET', '/users', { headers: bearer(WRITE) });
          const body = assertProblem(answer, trouble.status);
          if (trouble.status === 503) {
            assert.equal(body.type, '/problems/unavailable');
            assert.match(answer.headers.get('retry-after') ?? '', /^\d+$/);
            assert.equal(answer.headers.get('www-authenticate'), null);
          }
        }
        assert.ok(server.requests.length <= 1, `asked ${server.requests.length} times`);
        assert.ok(!server.requests.includes('/elsewhere'), 'a redirect was followed');
        assert.equal(await status(app.app, 'GET', '/users', API_READ), 200, 'API tokens still work');
      } finally {
        await app.close();
        await server.close();
      }
    });
  }

  it('a key the provider publishes that cannot be used (an RSA key of one byte): 401 saying so, never 500', async () => {
    const server = await startJwksServer([rs.publicJwk]);
    server.mode = 'bad-key';
    const app = await startApp({ ...JWT_ENV, JWT_JWKS_URL: `${server.url}/jwks.json` });
    try {
      const answer = await call(app.app, 'GET', '/users', { headers: bearer(READ) });
      assertProblem(answer, 401);
      assert.match(
        answer.headers.get('www-authenticate') ?? '',
        /error_description="the provider's key for it cannot be used"/,
      );
    } finally {
      await app.close();
      await server.close();
    }
  });

  it('answers again once the provider is back and the cooldown has passed (JWT_JWKS_COOLDOWN=1s)', async () => {
    const server = await startJwksServer([rs.publicJwk]);
    server.mode = 'error';
    const app = await startApp({ ...JWT_ENV, JWT_JWKS_URL: `${server.url}/jwks.json`, JWT_JWKS_COOLDOWN: '1s' });
    try {
      assert.equal(await status(app.app, 'GET', '/users', READ), 503);
      server.mode = 'ok';
      await sleep(1100);
      assert.equal(await status(app.app, 'GET', '/users', READ), 200);
    } finally {
      await app.close();
      await server.close();
    }
  });
});

describe('JWT on the real service (a process), its logs', () => {
  const data = tempDir();
  let server: RunningServer | undefined;
  before(async () => {
    server = await startServer({
      ...JWT_ENV,
      DATABASE_URL: join(data.dir, 'users.db'),
      JWT_JWKS_URL: `${provider.url}/jwks.json`,
      RATE_LIMIT: 'off',
    });
  });
  after(async () => {
    await server?.stop();
    data.cleanup();
  });

  it('verifies tokens, refuses the attacks, and never writes a token to the logs', async () => {
    assert.ok(server !== undefined);
    const { url } = server;
    assert.equal(await status(url, 'GET', '/users', READ), 200);
    assert.equal(await status(url, 'POST', '/users?name=Pat&age=40&city=Oslo', WRITE), 200);
    assert.deepEqual((await call(url, 'GET', '/auth/scope', { headers: bearer(READ) })).json, { scope: 'read' });
    for (const scenario of ATTACK_SCENARIOS) await runScenario(url, { ...scenario, socket: false });
    const logs = server.logs;
    assert.ok(
      logs.some((line) => line.includes('authentication failed') && line.includes('expired')),
      'no reason logged',
    );
    assertNotLogged(
      logs,
      SECRET_TOKENS.flatMap((token) => token.split('.')).filter((part) => part.length >= 20),
    );
  });
});

describe('JWT settings that do not fit together stop the service', () => {
  const cases: ReadonlyArray<{ name: string; env: Record<string, string>; message: RegExp }> = [
    {
      name: 'both a JWKS URL and a public key',
      env: { ...JWT_ENV, JWT_JWKS_URL: 'https://id.example.test/jwks', JWT_PUBLIC_KEY: rs.publicPem },
      message: /JWT_JWKS_URL or JWT_PUBLIC_KEY, not both/,
    },
    {
      name: 'a plain http JWKS URL to another machine',
      env: { ...JWT_ENV, JWT_JWKS_URL: 'http://id.example.test/jwks' },
      message: /JWT_JWKS_URL must be https/,
    },
    {
      name: 'no issuer',
      env: { JWT_AUDIENCE: AUDIENCE, JWT_JWKS_URL: 'https://id.example.test/jwks' },
      message: /JWT_ISSUER is required/,
    },
  ];
  for (const row of cases) {
    it(`${row.name}: exit 2, saying why`, async () => {
      const result = await runCli(['serve'], { env: { DATABASE_URL: ':memory:', PORT: '0', ...row.env } });
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, row.message);
      assert.ok(!result.stderr.includes('BEGIN PUBLIC KEY'), 'the key was echoed');
    });
  }
});
