import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { appForSuite } from '../helpers/app.ts';
import { type Backend, BACKENDS, type Database } from '../helpers/backends.ts';
import { type Answer, assertProblem, call, rawRequest, type Target } from '../helpers/http.ts';
import { runScenarios, type Scenario } from '../helpers/scenario.ts';
import { type RunningServer, startServer } from '../helpers/server.ts';

// POST /users with Idempotency-Key on each store: a retry gets the first answer and stores nothing.
// In process (buildApp, app.inject, the app's socket for raw header bytes); the key lives in the
// database, so surviving a restart and being shared by two instances is shown with real processes.

/** The headers a replay must repeat exactly. */
const REPEATED = ['location', 'content-location', 'etag', 'content-type'] as const;

const newKey = () => `k-${randomUUID()}`;
const unique = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

function post(base: Target, key: string | undefined, query: string, init: { type?: string; body?: string } = {}) {
  const headers: Record<string, string> = {};
  if (key !== undefined) headers['idempotency-key'] = key;
  if (init.type !== undefined) headers['content-type'] = init.type;
  return call(base, 'POST', `/users${query}`, { headers, body: init.body });
}

/** Asserts that `replay` is the first answer again, marked as replayed. */
function assertReplay(replay: Answer, first: Answer): void {
  assert.equal(replay.status, 200, replay.text);
  assert.equal(replay.text, first.text);
  for (const name of REPEATED) assert.equal(replay.headers.get(name), first.headers.get(name), name);
  assert.equal(replay.headers.get('idempotent-replayed'), 'true');
}

/** How many stored records have this name (the filtered listing, straight from the database). */
async function countNamed(base: Target, name: string): Promise<number> {
  const answer = await call(base, 'GET', `/users?name=${encodeURIComponent(name)}`);
  assert.equal(answer.status, 200);
  return answer.json.data.length;
}

/** The names in the full listing (the cached answer of GET /users). */
async function listedNames(base: Target): Promise<string[]> {
  const answer = await call(base, 'GET', '/users');
  assert.equal(answer.status, 200);
  return answer.json.data.map((record: { name: string }) => record.name);
}

function assertReused(answer: Answer): void {
  const body = assertProblem(answer, 422);
  assert.equal(body.type, '/problems/idempotency-key-reused');
}

for (const backend of BACKENDS) {
  describe(`Idempotency-Key on POST /users [${backend.name}]`, { skip: backend.skip, timeout: 120_000 }, () => {
    const suite = appForSuite({}, backend);
    /** The app, for app.inject (its socket, suite.current.url, where bytes on the wire matter). */
    const app = () => suite.current.app;

    it('a retry with the same key and input gets the first answer, marked replayed, and stores nothing', async () => {
      const name = unique('Ada');
      const key = newKey();
      const first = await post(app(), key, `?name=${name}&age=36&city=London&fields=id,name,age,city,createdAt`);
      assert.equal(first.status, 200, first.text);
      assert.equal(first.headers.get('idempotent-replayed'), null);
      assert.match(first.headers.get('location') ?? '', /^\/users\/\d+$/);
      for (let i = 0; i < 3; i++) {
        assertReplay(
          await post(app(), key, `?name=${name}&age=36&city=London&fields=id,name,age,city,createdAt`),
          first,
        );
      }
      assert.equal(await countNamed(app(), name), 1);
      assert.equal((await listedNames(app())).filter((listed) => listed === name).length, 1);
    });

    it('the same input as a JSON or form body, or written differently, is the same request', async () => {
      const name = unique('Ben');
      const key = newKey();
      const first = await post(app(), key, `?name=${name}&age=41&city=Leeds`);
      assert.equal(first.status, 200, first.text);
      const json = JSON.stringify({ name: ` ${name} `, age: 41, city: 'Leeds' });
      assertReplay(await post(app(), key, '', { type: 'application/json', body: json }), first);
      const form = `name=${name}&age=041&city=Leeds`;
      assertReplay(await post(app(), key, '', { type: 'application/x-www-form-urlencoded', body: form }), first);
      // Naming the default fields shows the same body, so it is the same request too.
      assertReplay(await post(app(), key, `?name=${name}&age=41&city=Leeds&fields=name,age,city`), first);
      assert.equal(await countNamed(app(), name), 1);
    });

    it('the same key with other input, or other fields, answers 422 and stores nothing', async () => {
      const name = unique('Cy');
      const key = newKey();
      const first = await post(app(), key, `?name=${name}&age=5&city=York`);
      assert.equal(first.status, 200, first.text);
      assertReused(await post(app(), key, `?name=${name}&age=6&city=York`));
      assertReused(await post(app(), key, `?name=${name}x&age=5&city=York`));
      assertReused(await post(app(), key, `?name=${name}&age=5&city=York&fields=id`));
      assertReused(
        await post(app(), key, '', {
          type: 'application/json',
          body: JSON.stringify({ name, age: 5, city: 'Hull' }),
        }),
      );
      assert.equal(await countNamed(app(), `${name}x`), 0);
      assert.equal(await countNamed(app(), name), 1);
      // The key still replays for its own input.
      assertReplay(await post(app(), key, `?name=${name}&age=5&city=York`), first);
    });

    it('a replay after a change answers the record as it is now; after a deletion, 409 and no data', async () => {
      const name = unique('Dee');
      const key = newKey();
      const query = `?name=${name}&age=30&city=Paris&fields=id,name,age,city`;
      const first = await post(app(), key, query);
      assert.equal(first.status, 200, first.text);
      const location = first.headers.get('location') ?? '';

      const patched = await call(app(), 'PATCH', `${location}?city=Rome`);
      assert.equal(patched.status, 200);
      await listedNames(app()); // the full listing is now kept in memory
      const replay = await post(app(), key, query);
      assert.equal(replay.status, 200, replay.text);
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      assert.equal(replay.headers.get('location'), location);
      assert.equal(replay.headers.get('etag'), patched.headers.get('etag'));
      assert.deepEqual(replay.json.data, [{ ...first.json.data[0], city: 'Rome' }], 'the record as it is now');
      const listed = await call(app(), 'GET', '/users?fields=name,city');
      const mine = listed.json.data.filter((record: { name: string }) => record.name === name);
      assert.deepEqual(mine, [{ name, city: 'Rome' }], 'the replay must not change what is stored or listed');

      assert.equal((await call(app(), 'DELETE', location)).status, 200);
      await listedNames(app());
      const gone = await post(app(), key, query);
      const problem = assertProblem(gone, 409);
      assert.equal(problem.type, '/problems/idempotency-key-record-deleted');
      assert.ok(!gone.text.includes(name), 'the deleted record is not shown again');
      assert.equal((await call(app(), 'GET', location)).status, 404);
      assert.ok(!(await listedNames(app())).includes(name), 'the deleted record is listed again');
      assert.equal(await countNamed(app(), name), 0);
    });

    it('20 concurrent POSTs with one key store one record and get 20 identical answers', async () => {
      const name = unique('Eve');
      const key = newKey();
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => post(app(), key, `?name=${name}&age=22&city=Oslo&fields=id,name`)),
      );
      const [first] = answers.filter((answer) => answer.headers.get('idempotent-replayed') === null);
      assert.ok(first !== undefined, 'no answer created the record');
      assert.equal(first.status, 200, first.text);
      for (const answer of answers) {
        if (answer !== first) assertReplay(answer, first);
      }
      assert.equal(await countNamed(app(), name), 1);
    });

    it('concurrent POSTs with one key and different input: one record, the others 422 or replays', async () => {
      const name = unique('Fay');
      const key = newKey();
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) => post(app(), key, `?name=${name}&age=${i % 2}&city=Oslo`)),
      );
      const created = answers.filter((answer) => answer.status === 200);
      for (const answer of answers) assert.ok([200, 422].includes(answer.status), answer.text);
      assert.equal(new Set(created.map((answer) => answer.text)).size, 1);
      assert.equal(created.filter((answer) => answer.headers.get('idempotent-replayed') === null).length, 1);
      assert.equal(await countNamed(app(), name), 1);
    });

    it('without a key two identical POSTs make two records, as before', async () => {
      const name = unique('Gus');
      const first = await post(app(), undefined, `?name=${name}&age=9&city=Bath`);
      const second = await post(app(), undefined, `?name=${name}&age=9&city=Bath`);
      assert.equal(first.status, 200);
      assert.equal(second.status, 200);
      assert.notEqual(first.headers.get('location'), second.headers.get('location'));
      assert.equal(second.headers.get('idempotent-replayed'), null);
      assert.equal(await countNamed(app(), name), 2);
    });

    const invalidKeys: Array<{ name: string; key: string }> = [
      { name: 'empty', key: '' },
      { name: '256 characters', key: 'k'.repeat(256) },
      { name: 'an inner space', key: 'my key' },
      { name: 'a tab', key: 'my\tkey' },
    ];
    runScenarios(
      () => suite.current,
      invalidKeys.map((row): Scenario => {
        const name = unique('Hal');
        return {
          name: `a key that is ${row.name} answers 400 naming Idempotency-Key, and stores nothing`,
          method: 'POST',
          url: `/users?name=${name}&age=1&city=Ely`,
          headers: { 'idempotency-key': row.key },
          expectedStatus: 400,
          expectedProblem: { type: '/problems/invalid-input', parameters: ['Idempotency-Key'] },
          after: async () => assert.equal(await countNamed(app(), name), 0),
        };
      }),
    );

    it('a key of non-ASCII bytes, or a key given twice, answers 400', async () => {
      const name = unique('Ivy');
      const send = (headers: string) =>
        rawRequest(
          suite.current.url,
          Buffer.concat([
            Buffer.from(`POST /users?name=${name}&age=1&city=Ely HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n`),
            Buffer.from(headers, 'utf8'),
            Buffer.from('Content-Length: 0\r\n\r\n'),
          ]),
        );
      const nonAscii = await send('Idempotency-Key: cl\u00e9\r\n');
      assert.equal(nonAscii.status, 400, nonAscii.body);
      assert.match(nonAscii.body, /Idempotency-Key/);
      const twice = await send('Idempotency-Key: a\r\nIdempotency-Key: b\r\n');
      assert.equal(twice.status, 400, twice.body);
      assert.match(twice.body, /Idempotency-Key/);
      assert.equal(await countNamed(app(), name), 0);
    });

    it('a key of 255 printable ASCII characters is accepted; other methods ignore the header', async () => {
      const name = unique('Jo');
      const key = `${'~!'.repeat(127)}Z`;
      const first = await post(app(), key, `?name=${name}&age=1&city=Ely`);
      assert.equal(first.status, 200, first.text);
      assertReplay(await post(app(), key, `?name=${name}&age=1&city=Ely`), first);
      const location = first.headers.get('location') ?? '';
      const put = await call(app(), 'PUT', `${location}?name=${name}&age=2&city=Ely`, {
        headers: { 'idempotency-key': 'not a valid key' },
      });
      assert.equal(put.status, 200, put.text);
    });
  });

  describe(`Idempotency-Key across a restart [${backend.name}]`, { skip: backend.skip, timeout: 120_000 }, () => {
    let database: Database | undefined;
    const servers: RunningServer[] = [];
    before(async () => {
      database = await (backend as Backend).fresh();
    });
    after(async () => {
      for (const server of servers) await server.stop('SIGKILL');
      await database?.drop();
    });

    it('a key remembered before SIGTERM replays on a new server on the same database', async () => {
      const env = { DATABASE_URL: (database as Database).url };
      const key = newKey();
      const query = '?name=Kim&age=50&city=Turin&fields=id,name,createdAt';
      const firstServer = await startServer(env);
      servers.push(firstServer);
      const first = await post(firstServer.url, key, query);
      assert.equal(first.status, 200, first.text);
      assert.equal(await firstServer.stop('SIGTERM'), 0);

      const secondServer = await startServer(env);
      servers.push(secondServer);
      assertReplay(await post(secondServer.url, key, query), first);
      assertReused(await post(secondServer.url, key, '?name=Kim&age=51&city=Turin'));
      assert.equal(await countNamed(secondServer.url, 'Kim'), 1);
    });
  });
}

const postgresql = BACKENDS.find((backend) => backend.name === 'postgresql');

describe(
  'Idempotency-Key on two instances of one PostgreSQL database',
  {
    skip: postgresql?.skip ?? 'no PostgreSQL backend',
    timeout: 120_000,
  },
  () => {
    let database: Database | undefined;
    let servers: RunningServer[] = [];
    before(async () => {
      database = await (postgresql as Backend).fresh();
      servers = await Promise.all([1, 2].map(() => startServer({ DATABASE_URL: (database as Database).url })));
    });
    after(async () => {
      for (const server of servers) await server.stop();
      await database?.drop();
    });

    it('a key used on one instance replays (or is refused) on the other', async () => {
      const [a, b] = servers.map((server) => server.url) as [string, string];
      const key = newKey();
      const first = await post(a, key, '?name=Lea&age=28&city=Lyon');
      assert.equal(first.status, 200, first.text);
      assertReplay(await post(b, key, '?name=Lea&age=28&city=Lyon'), first);
      assertReused(await post(b, key, '?name=Lea&age=29&city=Lyon'));
      assert.equal(await countNamed(b, 'Lea'), 1);
    });

    it('20 concurrent POSTs with one key spread over both instances store one record', async () => {
      const key = newKey();
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          post((servers[i % 2] as RunningServer).url, key, '?name=Max&age=33&city=Nice&fields=id'),
        ),
      );
      const [first] = answers.filter((answer) => answer.headers.get('idempotent-replayed') === null);
      assert.ok(first !== undefined, 'no answer created the record');
      assert.equal(first.status, 200, first.text);
      for (const answer of answers) {
        if (answer !== first) assertReplay(answer, first);
      }
      assert.equal(await countNamed((servers[0] as RunningServer).url, 'Max'), 1);
    });
  },
);
