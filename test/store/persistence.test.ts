import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { call, createUser } from '../helpers/http.ts';
import { startWriters, waitFor } from '../helpers/load.ts';
import { type Backend, BACKENDS } from '../helpers/backends.ts';
import { type RunningServer, startServer } from '../helpers/server.ts';

type Start = (env?: Record<string, string>) => Promise<RunningServer>;

/**
 * Runs a test with a database folder that outlives server restarts. Every server the test starts
 * through `start` is killed at the end if the test left it running, and the folder is removed.
 */
async function withDatabase(backend: Backend, test: (start: Start) => Promise<void>): Promise<void> {
  const database = await backend.fresh();
  const env = { DATABASE_URL: database.url };
  const servers: RunningServer[] = [];
  const start: Start = async (extra = {}) => {
    const server = await startServer({ ...env, ...extra });
    servers.push(server);
    return server;
  };
  try {
    await test(start);
  } finally {
    for (const server of servers) await server.stop('SIGKILL');
    await database.drop();
  }
}

/** The names listed by a fresh server on the same database. */
async function namesAfterRestart(start: Start): Promise<string[]> {
  const restarted = await start();
  try {
    const list = await call(restarted.url, 'GET', '/users?fields=name');
    return list.json.data.map((record: { name: string }) => record.name);
  } finally {
    await restarted.stop();
  }
}

for (const backend of BACKENDS) {
  describe(`durability [${backend.name}]`, { timeout: 120_000, skip: backend.skip }, () => {
    it('records, changes and deletions survive a restart, and ids are never reused', () =>
      withDatabase(backend, async (start) => {
        let server = await start();
        const a = await createUser(server.url, 'Ada', 36, 'London');
        const b = await createUser(server.url, 'Ben', 41, 'Leeds');
        await call(server.url, 'PATCH', `/users/${a}?city=Cambridge`);
        await call(server.url, 'DELETE', `/users/${b}`);
        const before = await call(server.url, 'GET', '/users?fields=id,name,age,city,createdAt,updatedAt');
        assert.equal(await server.stop('SIGTERM'), 0);

        server = await start();
        const after = await call(server.url, 'GET', '/users?fields=id,name,age,city,createdAt,updatedAt');
        assert.equal(after.text, before.text);
        assert.deepEqual(
          after.json.data.map((record: { name: string; city: string }) => [record.name, record.city]),
          [['Ada', 'Cambridge']],
        );
        const c = await createUser(server.url, 'Cy', 5, 'York');
        assert.ok(c > b, `id ${c} must be greater than the deleted ${b}`);
        await server.stop();
      }));

    it('every write answered 200 before a SIGKILL is listed exactly once after restart', () =>
      withDatabase(backend, async (start) => {
        const server = await start();
        const load = startWriters(server.url, 20, 'w');
        const enough = await waitFor(() => load.answered.size >= 300, 30_000);
        assert.ok(enough, `only ${load.answered.size} writes were answered in 30 s`);
        await server.stop('SIGKILL');
        await load.stop();

        const names = await namesAfterRestart(start);
        const counts = new Map<string, number>();
        for (const name of names) counts.set(name, (counts.get(name) ?? 0) + 1);
        for (const name of load.answered) {
          assert.equal(counts.get(name), 1, `${name} was answered 200 but is listed ${counts.get(name) ?? 0} times`);
        }
        for (const [name, count] of counts) {
          assert.equal(count, 1, `${name} is listed ${count} times`);
          assert.ok(load.attempted.has(name), `${name} was never sent`);
        }
        console.log(
          `# SIGKILL [${backend.name}]: ${load.answered.size} answered writes, ${names.length} listed after restart`,
        );
      }));

    it('SIGTERM under load finishes the requests in flight, loses no answered write and exits 0', () =>
      withDatabase(backend, async (start) => {
        // No wall-clock bound: the server itself exits 1 once SHUTDOWN_TIMEOUT_MS has passed, so exit
        // 0 says it finished within it. The writers' idle keep-alive connections would hold it open
        // for KEEP_ALIVE_TIMEOUT_MS, ten times longer, so exit 0 also says it did not wait for them.
        const server = await start({ SHUTDOWN_TIMEOUT_MS: '60000', KEEP_ALIVE_TIMEOUT_MS: '600000' });
        const load = startWriters(server.url, 10, 't');
        assert.ok(await waitFor(() => load.answered.size >= 100, 30_000), 'the load did not get going');
        const started = Date.now();
        const exit = await server.stop('SIGTERM', 90_000);
        const took = Date.now() - started;
        await load.stop();
        assert.equal(exit, 0, `exit ${exit} after ${took} ms`);
        for (const status of load.statuses.keys()) assert.ok([200, 503].includes(status), `unexpected ${status}`);
        for (const type of load.errorTypes) assert.match(type, /^application\/problem\+json/);

        const names = new Set(await namesAfterRestart(start));
        for (const name of load.answered) assert.ok(names.has(name), `${name} was answered 200 but lost`);
        const shed = load.statuses.get(503) ?? 0;
        console.log(
          `# SIGTERM [${backend.name}]: ${load.answered.size} answered writes kept, ${shed} shed with 503, exit 0 in ${took} ms`,
        );
      }));
  });
}
