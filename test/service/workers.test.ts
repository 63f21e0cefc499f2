import assert from 'node:assert/strict';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { request } from 'node:http';
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

    it('a worker killed during a burst of new connections: each is answered or reset, none left waiting', async () => {
      /** The primary's open sockets: the listening one, its IPC channels, and any connection it still holds. */
      const sockets = () =>
        readdirSync(`/proc/${server.pid}/fd`).filter((fd) => {
          try {
            return readlinkSync(`/proc/${server.pid}/fd/${fd}`).startsWith('socket:');
          } catch {
            return false; // closed meanwhile
          }
        }).length;
      const { hostname, port } = new URL(server.url);
      /** One GET on a new connection: `answered`, `reset` (or another error code), or `waiting` after 20 s. */
      const get = () =>
        new Promise<string>((resolve) => {
          const req = request({ host: hostname, port, path: '/healthz', agent: false }, (res) => {
            res.resume();
            res.on('end', () => resolve('answered'));
            res.on('error', () => resolve('reset'));
          });
          req.on('error', (error: NodeJS.ErrnoException) =>
            resolve(error.code === 'ECONNRESET' ? 'reset' : `${error.code}`),
          );
          req.setTimeout(20_000, () => {
            resolve('waiting');
            req.destroy();
          });
          req.end();
        });
      const before = sockets();
      const outcomes: string[] = [];
      for (let round = 0; round < 3; round++) {
        const listening = pidsLogging(server.logs, 'Server listening at').size;
        const workers = readFileSync(`/proc/${server.pid}/task/${server.pid}/children`, 'utf8').trim().split(/\s+/);
        const burst: Array<Promise<string>> = [];
        for (let i = 0; i < 40; i++) {
          burst.push(get());
          await new Promise((resolve) => setTimeout(resolve, 5));
          if (i === 15) process.kill(Number(workers[0]), 'SIGKILL');
        }
        outcomes.push(...(await Promise.all(burst)));
        assert.ok(
          await waitFor(() => pidsLogging(server.logs, 'Server listening at').size === listening + 1, 30_000),
          'no new worker started',
        );
      }
      assert.deepEqual(
        outcomes.filter((outcome) => outcome !== 'answered' && outcome !== 'reset'),
        [],
        `${outcomes.filter((outcome) => outcome === 'answered').length} answered`,
      );
      assert.equal(sockets(), before, 'the primary holds connections no worker will answer');
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
