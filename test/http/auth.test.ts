import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { appForSuite, type InProcessApp } from '../helpers/app.ts';
import { assertProblem, call, type Target } from '../helpers/http.ts';
import { assertNotLogged } from '../helpers/log-check.ts';
import { runScenario, runScenarios, type Scenario } from '../helpers/scenario.ts';
import { type RunningServer, startServer, tempDir } from '../helpers/server.ts';

const READ = 'read-token-3f9a1c-5e8b2d7c4a1f0963';
const WRITE = 'write-token-8b2e7d-0a4c6e1f3b5d7928';
/** Never configured; shaped like the real ones, and one that differs from READ by its last character. */
const WRONG = 'wrong-token-5c6d0e-9f1b3d5a7c2e4680';
const NEAR = 'read-token-3f9a1c-5e8b2d7c4a1f0964';

const CHALLENGE = 'Bearer realm="user-records"';
const INVALID = `${CHALLENGE}, error="invalid_token"`;
const SCOPE = `${CHALLENGE}, error="insufficient_scope", scope="write"`;

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Starts the server process with the given token settings and keeps its log lines for the suite. */
function serverWithTokens(env: (dir: string) => Record<string, string>): { readonly server: RunningServer } {
  const data = tempDir();
  let server: RunningServer | undefined;
  before(async () => {
    server = await startServer({ DATABASE_URL: join(data.dir, 'users.db'), ...env(data.dir) });
  });
  after(async () => {
    await server?.stop();
    data.cleanup();
  });
  return {
    get server() {
      assert.ok(server !== undefined, 'the suite server has not started');
      return server;
    },
  };
}

/** The app built in this process with the given token settings (a tokens file goes in a folder of its own). */
function appWithTokens(env: (dir: string) => Record<string, string>): { readonly current: InProcessApp } {
  const data = tempDir();
  const suite = appForSuite(() => env(data.dir));
  after(() => data.cleanup());
  return suite;
}

/** Creates a record with the write token and returns its path. */
async function create(base: Target, name: string): Promise<string> {
  const answer = await call(base, 'POST', `/users?name=${name}&age=40&city=Turin`, { headers: bearer(WRITE) });
  assert.equal(answer.status, 200, answer.text);
  return answer.headers.get('location') ?? '';
}

const REFUSALS: ReadonlyArray<{
  name: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  challenge: string;
}> = [
  { name: 'no Authorization header', method: 'GET', path: '/users', challenge: CHALLENGE },
  { name: 'no header, on a write', method: 'POST', path: '/users?name=A&age=1&city=B', challenge: CHALLENGE },
  { name: 'no header, on a record', method: 'DELETE', path: '/users/1', challenge: CHALLENGE },
  {
    name: 'Basic scheme',
    method: 'GET',
    path: '/users',
    headers: { authorization: 'Basic dXNlcjpwdw==' },
    challenge: CHALLENGE,
  },
  {
    name: 'the token without a scheme',
    method: 'GET',
    path: '/users',
    headers: { authorization: READ },
    challenge: CHALLENGE,
  },
  {
    name: '"Bearer" and nothing else',
    method: 'GET',
    path: '/users',
    headers: { authorization: 'Bearer' },
    challenge: CHALLENGE,
  },
  {
    name: 'two tokens',
    method: 'GET',
    path: '/users',
    headers: { authorization: `Bearer ${READ} ${WRITE}` },
    challenge: CHALLENGE,
  },
  { name: 'a wrong token', method: 'GET', path: '/users', headers: bearer(WRONG), challenge: INVALID },
  {
    name: 'a wrong token, on a write',
    method: 'PUT',
    path: '/users/1?name=A&age=1&city=B',
    headers: bearer(WRONG),
    challenge: INVALID,
  },
  { name: 'a token one character off', method: 'GET', path: '/users', headers: bearer(NEAR), challenge: INVALID },
  {
    name: 'a prefix of a token',
    method: 'GET',
    path: '/users',
    headers: bearer(READ.slice(0, -1)),
    challenge: INVALID,
  },
  {
    name: 'the scope:token form',
    method: 'GET',
    path: '/users',
    headers: bearer(`read:${READ}`),
    challenge: INVALID,
  },
  {
    name: 'an unknown path, no token (401 before 404)',
    method: 'GET',
    path: '/nothing-here',
    challenge: CHALLENGE,
  },
  {
    name: 'an unknown path, a wrong token',
    method: 'GET',
    path: '/nothing-here',
    headers: bearer(WRONG),
    challenge: INVALID,
  },
  { name: 'a plain OPTIONS, no token', method: 'OPTIONS', path: '/users', challenge: CHALLENGE },
  { name: '/metrics, no token', method: 'GET', path: '/metrics', challenge: CHALLENGE },
];

/** Each refusal as a scenario: 401 problem details with its challenge, and no token in the answer. */
const REFUSAL_SCENARIOS: readonly Scenario[] = REFUSALS.map((row) => ({
  name: `401 for ${row.name}: ${row.method} ${row.path}`,
  method: row.method,
  url: row.path,
  headers: row.headers,
  expectedStatus: 401,
  expectedProblem: { type: '/problems/unauthorized' },
  expectedHeaders: { 'www-authenticate': row.challenge },
  notExpectedContent: [READ, WRITE, WRONG, NEAR],
}));

/** A read token reads (scheme in any case), and nothing else. */
async function checkReadToken(base: Target, record: string): Promise<void> {
  const before = await call(base, 'GET', record, { headers: bearer(READ) });
  assert.equal(before.status, 200, before.text);
  const reads: ReadonlyArray<[method: string, path: string, status: number]> = [
    ['GET', '/users', 200],
    ['GET', record, 200],
    ['HEAD', record, 200],
    ['OPTIONS', '/users', 204],
  ];
  for (const [method, path, status] of reads) {
    for (const authorization of [`Bearer ${READ}`, `bearer ${READ}`, `BEARER ${READ}`]) {
      const answer = await call(base, method, path, { headers: { authorization } });
      assert.equal(answer.status, status, `${method} ${path} with ${authorization.split(' ')[0]}: ${answer.text}`);
    }
  }
  const count = (await call(base, 'GET', '/users', { headers: bearer(READ) })).json.data.length;

  const writes: ReadonlyArray<[method: string, path: string]> = [
    ['POST', '/users?name=Nope&age=1&city=Nowhere'],
    ['PUT', `${record}?name=Nope&age=1&city=Nowhere`],
    ['PATCH', `${record}?name=Nope`],
    ['DELETE', record],
  ];
  for (const [method, path] of writes) {
    const answer = await call(base, method, path, { headers: bearer(READ) });
    const body = assertProblem(answer, 403);
    assert.equal(body.type, '/problems/forbidden');
    assert.equal(answer.headers.get('www-authenticate'), SCOPE, `${method} ${path}`);
  }
  const after = await call(base, 'GET', record, { headers: bearer(READ) });
  assert.equal(after.text, before.text, 'a refused write changed the record');
  assert.equal((await call(base, 'GET', '/users', { headers: bearer(READ) })).json.data.length, count);
}

/** A write token does everything. */
async function checkWriteToken(base: Target): Promise<void> {
  const path = await create(base, 'Wanda');
  const steps: ReadonlyArray<[method: string, path: string, status: number]> = [
    ['GET', '/users', 200],
    ['GET', path, 200],
    ['PUT', `${path}?name=Wanda+B&age=41&city=Genoa`, 200],
    ['PATCH', `${path}?age=42`, 200],
    ['OPTIONS', path, 204],
    ['DELETE', path, 200],
    ['GET', path, 404],
  ];
  for (const [method, target, status] of steps) {
    const answer = await call(base, method, target, { headers: bearer(WRITE) });
    assert.equal(answer.status, status, `${method} ${target}: ${answer.text}`);
  }
}

/** Health, the OpenAPI document and the docs page answer without a token, and ignore a wrong one. */
async function checkOpenPaths(base: Target): Promise<void> {
  for (const headers of [undefined, bearer(WRONG)]) {
    for (const path of ['/healthz', '/readyz', '/openapi.json', '/docs', '/docs/json', '/docs/static/swagger-ui.css']) {
      const answer = await call(base, 'GET', path, { headers });
      assert.equal(answer.status, 200, `GET ${path}: ${answer.text.slice(0, 200)}`);
      assert.equal(answer.headers.get('www-authenticate'), null);
    }
  }
  const doc = (await call(base, 'GET', '/openapi.json')).json;
  assert.deepEqual(doc.components.securitySchemes.bearerAuth, {
    type: 'http',
    scheme: 'bearer',
    description: doc.components.securitySchemes.bearerAuth.description,
  });
  assert.deepEqual(doc.security, [{ bearerAuth: [] }]);
  assert.deepEqual(doc.paths['/healthz'].get.security, []);
  assert.ok(doc.paths['/users'].post.responses['403'], 'POST /users declares no 403');
}

/** A read token gets past authentication at /metrics. */
async function checkMetricsToken(base: Target): Promise<void> {
  // What /metrics answers is another suite's concern; here only that the token gets past auth.
  const answer = await call(base, 'GET', '/metrics', { headers: bearer(READ) });
  assert.ok(answer.status !== 401 && answer.status !== 403, `GET /metrics with a read token: ${answer.status}`);
}

const SOURCES: ReadonlyArray<{ name: string; env: (dir: string) => Record<string, string> }> = [
  { name: 'API_TOKENS', env: () => ({ API_TOKENS: `read:${READ},write:${WRITE}` }) },
  {
    name: 'API_TOKENS_FILE',
    env: (dir) => {
      const file = join(dir, 'tokens');
      writeFileSync(file, `# one scope:token a line\nread:${READ}\n\nwrite:${WRITE}\n`);
      return { API_TOKENS_FILE: file };
    },
  },
];

// In process (buildApp, app.inject): what each token may do.
for (const source of SOURCES) {
  describe(`authentication with ${source.name}`, () => {
    const suite = appWithTokens(source.env);
    let record = '';
    before(async () => {
      record = await create(suite.current.app, 'Kept');
    });

    runScenarios(() => suite.current, REFUSAL_SCENARIOS);

    it('lets a read token read (scheme in any case), and nothing else', () =>
      checkReadToken(suite.current.app, record));

    it('lets a write token do everything', () => checkWriteToken(suite.current.app));

    it('serves health, the OpenAPI document and the docs page without a token (and ignores a wrong one)', () =>
      checkOpenPaths(suite.current.app));

    it('lets a read token at /metrics', () => checkMetricsToken(suite.current.app));

    it('tells each token its scope at /auth/scope, and refuses a missing or wrong one', async () => {
      const { app } = suite.current;
      const scopeOf = async (headers: Record<string, string>) => {
        const answer = await call(app, 'GET', '/auth/scope', { headers });
        return answer.status === 200 ? (JSON.parse(answer.text) as unknown) : answer.status;
      };
      assert.deepEqual(await scopeOf(bearer(READ)), { scope: 'read' });
      assert.deepEqual(await scopeOf(bearer(WRITE)), { scope: 'write' });
      assert.equal(await scopeOf({}), 401);
      assert.equal(await scopeOf(bearer(WRONG)), 401);
      assertProblem(await call(app, 'GET', '/auth/scope?x=1', { headers: bearer(READ) }), 400);
      assertProblem(await call(app, 'POST', '/auth/scope', { headers: bearer(WRITE) }), 405);
    });
  });
}

// The logs are the process's standard output, so this part runs the real server: every request the
// suite above sends in process is sent to it (and checked again), then its output is searched.
for (const source of SOURCES) {
  describe(`authentication with ${source.name}, as a process: its logs`, () => {
    const suite = serverWithTokens(source.env);

    it('never writes a token to the logs', async () => {
      const base = suite.server.url;
      const record = await create(base, 'Kept');
      for (const scenario of REFUSAL_SCENARIOS) await runScenario(base, scenario);
      await checkReadToken(base, record);
      await checkWriteToken(base);
      await checkOpenPaths(base);
      await checkMetricsToken(base);
      // By now every token, right and wrong, has been sent many times.
      const logs = suite.server.logs;
      assert.ok(
        logs.some((line) => line.includes('"statusCode":401')),
        'the refusals were not logged; the search below would prove nothing',
      );
      assertNotLogged(logs, [READ, WRITE, WRONG, NEAR, READ.slice(0, -1)]);
    });
  });
}

describe('authentication off (no tokens configured, the default)', () => {
  const suite = appForSuite();

  it('answers the contract with no Authorization header and sends no challenge', async () => {
    const { app } = suite.current;
    const created = await call(app, 'POST', '/users?name=Open&age=5&city=Rome');
    assert.equal(created.status, 200, created.text);
    const list = await call(app, 'GET', '/users');
    assert.equal(list.status, 200);
    assert.equal(list.headers.get('www-authenticate'), null);
    assertProblem(await call(app, 'GET', '/nothing-here'), 404);
  });

  it('ignores an Authorization header it has no tokens for', async () => {
    const list = await call(suite.current.app, 'GET', '/users', { headers: bearer(WRONG) });
    assert.equal(list.status, 200);
  });

  it('says at /auth/scope that anyone may write', async () => {
    const answer = await call(suite.current.app, 'GET', '/auth/scope');
    assert.equal(answer.status, 200);
    assert.deepEqual(JSON.parse(answer.text), { scope: 'write' });
  });
});
