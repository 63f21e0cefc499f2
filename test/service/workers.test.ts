import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, type Database } from '../helpers/backends.ts';
import { call, getOnNewConnection } from '../helpers/http.ts';
import { startWriters, waitFor } from '../helpers/load.ts';
import { pidsLogging, type RunningServer, startServer } from '../helpers/server.ts';

// WORKERS=2: two processes share the port, on either store, and lose nothing between them.
for (const backend of BACKENDS) {
  describe(`WORKERS=2 [${backend.name}]`, { skip: backend.skip, timeout: 120_000 }, () => {
    let database: Database;
    let server: RunningServer;
    const start = () => startServer({ DATABASE_URL: database.url, WORKERS: '2' });
    before(async () => {
      database = await backend.fresh();
      server = await start();
    });
    after(async () => {
      await server.stop();
      await database.drop();
    });

    it('both workers answer requests, on one port', async () => {
      // A worker's own line may arrive just after the primary's (stdout and IPC are not ordered). The
      // waits are bounded generously (they end as soon as the lines are in): a busy machine reads late.
      await waitFor(() => pidsLogging(server.logs, 'Server listening at').size === 2, 30_000);
      const workers = pidsLogging(server.logs, 'Server listening at');
      assert.equal(workers.size, 2, `expected two workers listening: ${[...workers]}`);
      assert.ok(!workers.has(server.pid), 'the primary itself must not serve');
      for (let i = 0; i < 20; i++) assert.equal(await getOnNewConnection(server.url, '/users?limit=1'), 200);
      await waitFor(() => pidsLogging(server.logs, 'request completed').size === 2, 30_000);
      assert.deepEqual(pidsLogging(server.logs, 'request completed'), workers);
    });

    it('concurrent writes through both workers are each stored once, in one id sequence', async () => {
      const load = startWriters(server.url, 20, 'w', 15);
      await load.stop();
      assert.deepEqual([...load.statuses.keys()], [200], `statuses ${JSON.stringify([...load.statuses])}`);
      const list = await call(server.url, 'GET', '/users?fields=id,name');
      const records: Array<{ id: number; name: string }> = list.json.data;
      const names = records.map((record) => record.name).filter((name) => name.startsWith('w'));
      assert.deepEqual(new Set(names), load.answered);
      assert.equal(names.length, load.answered.size, 'a write is stored twice');
      const ids = records.map((record) => record.id);
      assert.deepEqual(
        ids,
        [...new Set(ids)].sort((a, b) => a - b),
      );
    });

    it('a worker that dies is replaced, and the service keeps answering', async () => {
      const [victim] = pidsLogging(server.logs, 'Server listening at');
      process.kill(victim as number, 'SIGKILL');
      const replaced = await waitFor(() => pidsLogging(server.logs, 'Server listening at').size === 3, 30_000);
      assert.ok(replaced, 'no new worker started');
      for (let i = 0; i < 10; i++) assert.equal(await getOnNewConnection(server.url, '/healthz'), 200);
    });

    it('SIGTERM to the primary drains both workers, keeps every answered write and exits 0', async () => {
      const load = startWriters(server.url, 10, 't');
      assert.ok(await waitFor(() => load.answered.size >= 50, 10_000), 'the load did not get going');
      const exit = await server.stop('SIGTERM');
      await load.stop();
      assert.equal(exit, 0);
      for (const status of load.statuses.keys()) assert.ok([200, 503].includes(status), `unexpected ${status}`);
      server = await start();
      const list = await call(server.url, 'GET', '/users?fields=name');
      const names = new Set(list.json.data.map((record: { name: string }) => record.name));
      for (const name of load.answered) assert.ok(names.has(name), `${name} was answered 200 but lost`);
      console.log(`# WORKERS=2 [${backend.name}]: SIGTERM under load kept all ${load.answered.size} answered writes`);
    });
  });
}
