import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { call, createUser } from './helpers/http.ts';
import { startServer, tempDir } from './helpers/server.ts';

describe('durability', () => {
  it('records, changes and deletions survive a restart, and ids are never reused', async () => {
    const data = tempDir();
    const env = { DATABASE_URL: `${data.dir}/users.db` };
    try {
      let server = await startServer(env);
      const a = await createUser(server.url, 'Ada', 36, 'London');
      const b = await createUser(server.url, 'Ben', 41, 'Leeds');
      await call(server.url, 'PATCH', `/users/${a}?city=Cambridge`);
      await call(server.url, 'DELETE', `/users/${b}`);
      const before = await call(server.url, 'GET', '/users?fields=id,name,age,city,createdAt,updatedAt');
      assert.equal(await server.stop('SIGTERM'), 0);

      server = await startServer(env);
      const after = await call(server.url, 'GET', '/users?fields=id,name,age,city,createdAt,updatedAt');
      assert.equal(after.text, before.text);
      assert.deepEqual(
        after.json.data.map((record: { name: string; city: string }) => [record.name, record.city]),
        [['Ada', 'Cambridge']],
      );
      const c = await createUser(server.url, 'Cy', 5, 'York');
      assert.ok(c > b, `id ${c} must be greater than the deleted ${b}`);
      await server.stop();
    } finally {
      data.cleanup();
    }
  });

  it('every write answered 200 before a SIGKILL is listed exactly once after restart', async () => {
    const data = tempDir();
    const env = { DATABASE_URL: `${data.dir}/users.db` };
    try {
      const server = await startServer(env);
      const acknowledged = new Set<string>();
      const attempted = new Set<string>();
      let killed = false;
      const writer = async (w: number) => {
        for (let n = 0; n < 2000 && !killed; n++) {
          const name = `w${w}-${n}`;
          attempted.add(name);
          try {
            const answer = await fetch(`${server.url}/users?name=${name}&age=${n % 151}&city=c${w}`, {
              method: 'POST',
            });
            if (answer.status === 200) {
              await answer.arrayBuffer();
              acknowledged.add(name);
            }
          } catch {
            return; // the server is gone
          }
        }
      };
      const writers = Array.from({ length: 20 }, (_, w) => writer(w));
      const deadline = Date.now() + 10_000;
      while (acknowledged.size < 300 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      assert.ok(acknowledged.size >= 300, `only ${acknowledged.size} writes were answered in 10 s`);
      await server.stop('SIGKILL');
      killed = true;
      await Promise.all(writers);

      const restarted = await startServer(env);
      const list = await call(restarted.url, 'GET', '/users?fields=name');
      const names: string[] = list.json.data.map((record: { name: string }) => record.name);
      await restarted.stop();

      const counts = new Map<string, number>();
      for (const name of names) counts.set(name, (counts.get(name) ?? 0) + 1);
      for (const name of acknowledged)
        assert.equal(counts.get(name), 1, `${name} was answered 200 but is listed ${counts.get(name) ?? 0} times`);
      for (const [name, count] of counts) {
        assert.equal(count, 1, `${name} is listed ${count} times`);
        assert.ok(attempted.has(name), `${name} was never sent`);
      }
      console.log(`# SIGKILL: ${acknowledged.size} answered writes, ${names.length} listed after restart`);
    } finally {
      data.cleanup();
    }
  });

  it('SIGTERM under load finishes the requests in flight, loses no answered write and exits 0', async () => {
    const data = tempDir();
    const env = { DATABASE_URL: `${data.dir}/users.db` };
    try {
      const server = await startServer(env);
      const answered = new Set<string>();
      const statuses = new Map<number, number>();
      let stopping = false;
      const writer = async (w: number) => {
        for (let n = 0; n < 2000; n++) {
          const name = `t${w}-${n}`;
          try {
            const answer = await fetch(`${server.url}/users?name=${name}&age=1&city=c`, { method: 'POST' });
            await answer.arrayBuffer();
            statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
            if (answer.status === 200) answered.add(name);
            if (answer.status !== 200 && stopping) return;
          } catch {
            if (stopping) return; // connection refused or closed once the server stopped listening
            throw new Error(`request ${name} failed before shutdown began`);
          }
        }
      };
      const writers = Array.from({ length: 10 }, (_, w) => writer(w));
      while (answered.size < 100) await new Promise((r) => setTimeout(r, 5));
      stopping = true;
      const started = Date.now();
      const exit = await server.stop('SIGTERM');
      const took = Date.now() - started;
      await Promise.all(writers);
      assert.equal(exit, 0);
      assert.ok(took < 5000, `shutdown took ${took} ms`);
      for (const status of statuses.keys()) assert.ok(status === 200 || status === 503, `unexpected status ${status}`);

      const restarted = await startServer(env);
      const names = new Set(
        (await call(restarted.url, 'GET', '/users?fields=name')).json.data.map(
          (record: { name: string }) => record.name,
        ),
      );
      await restarted.stop();
      for (const name of answered) assert.ok(names.has(name), `${name} was answered 200 but lost`);
      console.log(`# SIGTERM: ${answered.size} answered writes kept, exit 0 in ${took} ms`);
    } finally {
      data.cleanup();
    }
  });
});
