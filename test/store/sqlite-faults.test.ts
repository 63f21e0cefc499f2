import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openBetterSqlite } from '../../src/store/sqlite/native-objects.ts';
import { assertProblem, call, createUser } from '../helpers/http.ts';
import { mountExt4, mountSkip, mountTmpfs } from '../helpers/mounts.ts';
import { runCli } from '../helpers/cli.ts';
import { seedRecords } from '../helpers/seed.ts';
import { type RunningServer, startServer, tempDir } from '../helpers/server.ts';

// Faults of the SQLite file and its disk, made for real: files deleted or replaced under the running
// service, a damaged file, read-only and full file systems, a disk whose I/O fails, and another
// process that holds the write lock and stalls.

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits, bounded, until /readyz answers `status`. */
async function waitReadiness(base: string, status: number, withinMs = 10_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  let last = 0;
  while (Date.now() < deadline) {
    last = (await call(base, 'GET', '/readyz')).status;
    if (last === status) return;
    await pause(50);
  }
  assert.fail(`/readyz answered ${last}, not ${status}, for ${withinMs} ms`);
}

/** POSTs `count` creates one after another; returns the names answered 200 and every status seen. */
async function create(base: string, prefix: string, count: number) {
  const stored: string[] = [];
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) {
    const name = `${prefix}${i}`;
    const answer = await call(base, 'POST', `/users?name=${name}&age=1&city=C`);
    statuses.push(answer.status);
    if (answer.status === 200) stored.push(name);
    else assert.equal(assertProblem(answer, 503).type, '/problems/unavailable');
  }
  return { stored, statuses };
}

async function names(base: string): Promise<string[]> {
  const answer = await call(base, 'GET', '/users?fields=name');
  assert.equal(answer.status, 200);
  return answer.json.data.map((record: { name: string }) => record.name);
}

describe('SQLite files changed under a running service', () => {
  const data = tempDir();
  after(() => data.cleanup());

  it('the database file deleted: no write is answered 200 after it, and the service says not ready', async () => {
    const path = join(data.dir, 'deleted.db');
    const server = await startServer({ DATABASE_URL: path });
    try {
      assert.equal((await create(server.url, 'before', 3)).stored.length, 3);
      rmSync(path);
      const after = await create(server.url, 'after', 10);
      assert.deepEqual(after.stored, [], 'a write went to a deleted file and was answered 200');
      await waitReadiness(server.url, 503);
      assert.ok(server.logs.some((line) => line.includes('was deleted while the service was running')));
    } finally {
      await server.stop();
    }
    // What the deleted file held is saved beside it, and its orphaned log no longer sits at the path.
    const rescued = readdirSync(data.dir).filter((file) => file.startsWith('deleted.db.rescued-'));
    assert.equal(rescued.length, 1, readdirSync(data.dir).join(' '));
    const copy = openBetterSqlite(join(data.dir, rescued[0] as string), { readonly: true });
    try {
      assert.deepEqual(copy.prepare('SELECT name FROM users ORDER BY id').pluck().all(), [
        'before0',
        'before1',
        'before2',
      ]);
    } finally {
      copy.close();
    }
    assert.ok(!existsSync(`${path}-wal`));
    const fresh = await startServer({ DATABASE_URL: path });
    try {
      assert.deepEqual(await names(fresh.url), [], 'a restart starts an empty database, not a mix with the old log');
    } finally {
      await fresh.stop();
    }
  });

  it('the write-ahead log deleted, then SIGKILL: every write answered 200 is there after a restart', async () => {
    const path = join(data.dir, 'wal.db');
    const first = await startServer({ DATABASE_URL: path });
    let stored: string[];
    try {
      stored = (await create(first.url, 'kept', 50)).stored;
      assert.equal(stored.length, 50);
      rmSync(`${path}-wal`);
      const after = await create(first.url, 'after', 10);
      stored.push(...after.stored);
      await waitReadiness(first.url, 503);
    } finally {
      await first.stop('SIGKILL');
    }
    const second = await startServer({ DATABASE_URL: path });
    try {
      const listed = await names(second.url);
      assert.deepEqual(
        stored.filter((name) => !listed.includes(name)),
        [],
        'answered writes are missing after the restart',
      );
      const next = await call(second.url, 'POST', '/users?name=next&age=1&city=C&fields=id');
      assert.equal(next.status, 200);
      assert.ok(next.json.data[0].id > stored.length, 'an id was handed out again');
    } finally {
      await second.stop();
    }
  });

  it('the database file replaced by another: writes 503 and not ready; at start, a file that is not a database is refused', async () => {
    const path = join(data.dir, 'replaced.db');
    const server = await startServer({ DATABASE_URL: path });
    try {
      assert.equal((await create(server.url, 'before', 2)).stored.length, 2);
      const other = join(data.dir, 'other.db');
      writeFileSync(other, 'this is not a database '.repeat(200));
      renameSync(other, path);
      assert.deepEqual((await create(server.url, 'after', 5)).stored, []);
      await waitReadiness(server.url, 503);
    } finally {
      await server.stop();
    }
    await assert.rejects(
      startServer({ DATABASE_URL: path }),
      /exited \(1\)[\s\S]*cannot start: .*replaced\.db is not an SQLite database file/,
    );
  });

  it('a damaged database file: the start reads only the schema, reads the damage reaches answer 503, `check` names it', async () => {
    const path = join(data.dir, 'damaged.db');
    const long = 'x'.repeat(190);
    let server = await startServer({ DATABASE_URL: path });
    try {
      for (let i = 0; i < 60; i++) {
        assert.equal((await call(server.url, 'POST', `/users?name=${long}${i}&age=1&city=${long}`)).status, 200);
      }
    } finally {
      await server.stop();
    }
    // Junk over one page of records in the middle of the table: a new record's insert (at the end
    // of the table, and into index pages) does not reach it, so only the reads tell of the damage.
    const db = openBetterSqlite(path);
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    const leaves = db
      .prepare("SELECT pageno FROM dbstat WHERE name = 'users' AND pagetype = 'leaf' ORDER BY pageno")
      .pluck()
      .all() as number[];
    db.close();
    assert.ok(leaves.length >= 3, `the table has ${leaves.length} pages of records`);
    const fd = openSync(path, 'r+');
    writeSync(fd, Buffer.alloc(pageSize, 0x5a), 0, pageSize, ((leaves[1] as number) - 1) * pageSize);
    closeSync(fd);
    server = await startServer({ DATABASE_URL: path });
    try {
      // Pages of records (a streamed listing meeting it after it began is cut short instead:
      // the next test): each answer is the records as stored, or 503; never other data, never a 500.
      const statuses: number[] = [];
      for (const query of [
        '?limit=50',
        '?limit=50&sort=-name',
        '?q=xxx&limit=50',
        '?city=nowhere',
        '?age.gte=0&limit=50',
      ]) {
        const answer = await call(server.url, 'GET', `/users${query}`);
        statuses.push(answer.status);
        if (answer.status === 503) assert.equal(assertProblem(answer, 503).type, '/problems/unavailable');
        else assert.equal(answer.status, 200, `GET /users${query}`);
      }
      assert.ok(statuses.includes(503), `no read reached the damage: ${statuses.join(', ')}`);
      // A read met the damage: the writer checks the file first, and refuses while it is damaged.
      const write = await call(server.url, 'POST', '/users?name=After&age=1&city=C');
      assert.equal(assertProblem(write, 503).type, '/problems/unavailable');
    } finally {
      await server.stop();
    }
    const checked = await runCli(['check'], { env: { DATABASE_URL: path } });
    assert.equal(checked.code, 1, checked.stdout + checked.stderr);
    assert.match(checked.stdout + checked.stderr, /damaged|corrupt|integrity/i);
  });

  it('damage past the first page of a streamed listing: the answer is cut short and the log names the fault, not the client', async () => {
    const path = join(data.dir, 'damaged-late.db');
    await seedRecords(path, 2500, 'late');
    // The last leaf of the records' table, in key order (dbstat's path): ids past the first page.
    const db = openBetterSqlite(path, { readonly: true });
    const last = db
      .prepare("SELECT pageno FROM dbstat WHERE name = 'users' AND pagetype = 'leaf' ORDER BY path DESC LIMIT 1")
      .pluck()
      .get() as number;
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    db.close();
    const fd = openSync(path, 'r+');
    writeSync(fd, Buffer.alloc(pageSize, 0x5a), 0, pageSize, (last - 1) * pageSize);
    closeSync(fd);
    const server = await startServer({ DATABASE_URL: path });
    const cut: string[] = [];
    try {
      for (const accept of ['application/json', 'text/csv', 'application/x-ndjson']) {
        for (const encoding of ['identity', 'gzip']) {
          const headers = { accept, 'accept-encoding': encoding };
          const response = await fetch(`${server.url}/users?fields=id,name`, { headers });
          assert.equal(response.status, 200, accept);
          await assert.rejects(response.text(), `${accept}, ${encoding}: the body must end cut short, not look whole`);
          cut.push(response.headers.get('x-request-id') as string);
        }
      }
    } finally {
      await server.stop();
    }
    for (const id of cut) {
      const lines = server.logs.filter((line) => line.includes(id)).map((line) => JSON.parse(line));
      const fault = lines.find((line) => line.level >= 50 && JSON.stringify(line).includes('SQLITE_CORRUPT'));
      assert.ok(
        fault,
        `no error line names the fault of request ${id}:\n${lines.map((l) => JSON.stringify(l)).join('\n')}`,
      );
      assert.ok(
        !lines.some((line) => /aborted by the client/.test(line.msg)),
        `request ${id} logged as the client's abort`,
      );
      // The client was answered 200 and a body cut short: no line may say it was answered 503.
      assert.ok(!lines.some((line) => line.res?.statusCode === 503), `request ${id} logged as answered 503`);
    }
  });

  it("another program's SQLite file is refused at start and left as it was", async () => {
    const path = join(data.dir, 'theirs.db');
    const db = openBetterSqlite(path);
    db.exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('kept')");
    db.close();
    await assert.rejects(
      startServer({ DATABASE_URL: path }),
      /exited \(1\)[\s\S]*cannot start: .*theirs\.db holds another program's tables \(notes\), not this service's/,
    );
    const after = openBetterSqlite(path, { readonly: true });
    try {
      const tables = after.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").pluck().all();
      assert.deepEqual(tables, ['notes']);
      assert.equal(after.pragma('journal_mode', { simple: true }), 'delete');
    } finally {
      after.close();
    }
  });
});

describe('start-up faults of the database path, each in one line', () => {
  const data = tempDir();
  after(() => data.cleanup());
  const rows: Array<{ name: string; url: () => string; message: RegExp }> = [
    { name: 'a folder given as the file', url: () => data.dir, message: /is not a file \(a folder\?\)/ },
    {
      name: 'a path under a file',
      url: () => '/etc/hostname/users.db',
      message: /\/etc\/hostname is not a folder, so it cannot hold/,
    },
    {
      name: 'a folder that cannot be made (under /proc)',
      url: () => 'file:/proc/x/users.db',
      message: /cannot create the folder \/proc\/x for \/proc\/x\/users\.db: no such file or directory \(ENOENT\)/,
    },
  ];
  for (const row of rows) {
    it(`${row.name}: exits 1 naming the path and the cause, and leaves nothing behind`, async () => {
      const before = readdirSync(data.dir);
      await assert.rejects(startServer({ DATABASE_URL: row.url() }), (error: Error) => {
        assert.match(error.message, /exited \(1\) before listening/);
        const line = error.message.split('\n').find((text) => text.startsWith('user-records:'));
        assert.ok(line !== undefined, error.message);
        assert.match(line, row.message);
        return true;
      });
      assert.deepEqual(readdirSync(data.dir), before);
      assert.ok(!existsSync('/proc/x'));
    });
  }
});

describe('SQLite on a file system that turns read-only, fills up or fails', { skip: mountSkip() }, () => {
  it('read-only at start: refuses to start and says why, instead of serving with every write failing', async () => {
    const disk = mountTmpfs(8);
    try {
      const path = join(disk.dir, 'users.db');
      const server = await startServer({ DATABASE_URL: path });
      assert.equal((await create(server.url, 'a', 1)).stored.length, 1);
      await server.stop();
      disk.remount('ro');
      await assert.rejects(
        startServer({ DATABASE_URL: path }),
        /exited \(1\)[\s\S]*cannot start: cannot write the database file .*users\.db: read-only file system \(EROFS\)/,
      );
    } finally {
      disk.unmount();
    }
  });

  it('a full disk: not ready and writes 503 while full; ready and writing again once there is room', async () => {
    const disk = mountTmpfs(6);
    let server: RunningServer | undefined;
    try {
      const path = join(disk.dir, 'users.db');
      server = await startServer({ DATABASE_URL: path });
      assert.equal((await create(server.url, 'a', 5)).stored.length, 5);
      const filler = join(disk.dir, 'filler');
      // Fill what is left, in 256 KiB pieces, until the disk refuses.
      const fd = openSync(filler, 'w');
      try {
        for (;;) writeSync(fd, Buffer.alloc(256 * 1024));
      } catch (error) {
        assert.equal((error as NodeJS.ErrnoException).code, 'ENOSPC');
      } finally {
        closeSync(fd);
      }
      await waitReadiness(server.url, 503);
      const full = await create(server.url, 'full', 3);
      assert.ok(
        full.statuses.every((status) => status === 503 || status === 200),
        JSON.stringify(full),
      );
      rmSync(filler);
      await waitReadiness(server.url, 200);
      assert.equal((await create(server.url, 'again', 2)).stored.length, 2);
      const listed = await names(server.url);
      assert.deepEqual(
        [...['a0', 'a1', 'a2', 'a3', 'a4'], ...full.stored, 'again0', 'again1'].filter(
          (name) => !listed.includes(name),
        ),
        [],
      );
    } finally {
      await server?.stop();
      disk.unmount();
    }
  });

  it('a disk whose I/O fails: writes answer 503 (never 500) and the service says not ready', async () => {
    const disk = mountExt4(32);
    let server: RunningServer | undefined;
    try {
      server = await startServer({ DATABASE_URL: join(disk.dir, 'users.db') });
      assert.equal((await create(server.url, 'a', 3)).stored.length, 3);
      disk.fail();
      const after = await create(server.url, 'b', 10);
      assert.deepEqual(after.stored, []);
      for (const path of ['/users/1', '/users?fields=id,name', '/users']) {
        const answer = await call(server.url, 'GET', path);
        assert.ok(answer.status === 200 || answer.status === 503, `${path}: ${answer.status} ${answer.text}`);
      }
      await waitReadiness(server.url, 503);
      assert.equal((await call(server.url, 'GET', '/healthz')).status, 200, 'the process is alive');
    } finally {
      await server?.stop();
      disk.unmount();
    }
  });
});

/**
 * Another process that opens the file at `path` in WAL mode (as every process of the service does),
 * takes its write lock, and holds it for `holdMs`.
 */
async function lockHolder(path: string, holdMs: number): Promise<ChildProcess> {
  const holder = spawn(
    process.execPath,
    [
      '-e',
      `const db = new (require('better-sqlite3'))(${JSON.stringify(path)}); db.pragma('journal_mode = WAL'); db.exec('BEGIN IMMEDIATE'); console.log('locked'); setTimeout(() => db.exec('COMMIT'), ${holdMs});`,
    ],
    { cwd: new URL('../..', import.meta.url).pathname, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise<void>((resolve) => holder.stdout?.once('data', () => resolve()));
  return holder;
}

describe('another process holding the SQLite write lock', () => {
  it('a service starts beside it (an import, another instance) without the lock when its schema is current', async () => {
    const data = tempDir();
    const path = join(data.dir, 'users.db');
    let holder: ChildProcess | undefined;
    let server: RunningServer | undefined;
    try {
      assert.equal((await runCli(['migrate'], { env: { DATABASE_URL: path } })).code, 0);
      holder = await lockHolder(path, 60_000);
      // The lock is held for a minute, far past the start's wait: the start must not need it.
      server = await startServer({ DATABASE_URL: path, DATABASE_TIMEOUT_MS: '2000' });
      assert.equal((await call(server.url, 'GET', '/users')).status, 200);
    } finally {
      if (holder?.exitCode === null) holder.kill('SIGKILL');
      await server?.stop();
      data.cleanup();
    }
  });

  it('a start that must migrate waits up to DATABASE_TIMEOUT_MS for the lock, then migrates', async () => {
    const data = tempDir();
    const path = join(data.dir, 'users.db');
    let holder: ChildProcess | undefined;
    let server: RunningServer | undefined;
    try {
      // A new file, its lock held a moment (as by another instance starting on it): the start needs
      // the lock for every migration.
      holder = await lockHolder(path, 1_500);
      server = await startServer({ DATABASE_URL: path, DATABASE_TIMEOUT_MS: '60000' });
      assert.equal(await createUser(server.url, 'Ada', 36, 'London'), 1);
    } finally {
      if (holder?.exitCode === null) holder.kill('SIGKILL');
      await server?.stop();
      data.cleanup();
    }
  });

  it('a start or command that must migrate, the lock held past DATABASE_TIMEOUT_MS: exit 1 saying so in its words', async () => {
    const data = tempDir();
    const path = join(data.dir, 'users.db');
    let holder: ChildProcess | undefined;
    try {
      // A file of the version before the last migration (as after an upgrade of the service).
      assert.equal((await runCli(['migrate'], { env: { DATABASE_URL: path } })).code, 0);
      const older = openBetterSqlite(path);
      older.exec('DROP INDEX users_city_age; DELETE FROM schema_migrations WHERE version = 9');
      older.close();
      holder = await lockHolder(path, 60_000);
      const env = { DATABASE_URL: path, DATABASE_TIMEOUT_MS: '300' };
      const said =
        /^user-records: (cannot start: )?another process held the write lock of .*users\.db for longer than DATABASE_TIMEOUT_MS \(300 ms\) while its schema needed migrating to version \d+; try again once it is done, or raise DATABASE_TIMEOUT_MS$/;
      await assert.rejects(startServer(env), (error: Error) => {
        assert.match(error.message, /exited \(1\) before listening/);
        const line = error.message.split('\n').find((text) => text.startsWith('user-records:'));
        assert.match(line ?? error.message, said);
        return true;
      });
      for (const args of [
        ['migrate'],
        ['check'],
        ['export', '--quiet'],
        ['import', '-', '--format', 'csv', '--quiet'],
      ]) {
        const result = await runCli(args, { env, input: 'name,age,city\nAda,36,London\n' });
        assert.equal(result.code, 1, `${args[0]}: ${result.stderr}`);
        assert.match(result.stderr.trimEnd().split('\n').at(-1) ?? '', said, args[0]);
      }
      holder.kill('SIGKILL');
      const migrated = await runCli(['migrate', '--quiet'], { env });
      assert.deepEqual([migrated.code, migrated.stderr], [0, '']);
    } finally {
      if (holder?.exitCode === null) holder.kill('SIGKILL');
      data.cleanup();
    }
  });

  it('check and import on a current schema, the lock held past DATABASE_TIMEOUT_MS: exit 1 saying so, no damage reported', async () => {
    const data = tempDir();
    const path = join(data.dir, 'users.db');
    let holder: ChildProcess | undefined;
    try {
      const env = { DATABASE_URL: path, DATABASE_TIMEOUT_MS: '300' };
      const seeded = await runCli(['import', '-', '--format', 'csv', '--quiet'], {
        env,
        input: 'name,age,city\nZed,3,Q\n',
      });
      assert.equal(seeded.code, 0, seeded.stderr);
      holder = await lockHolder(path, 60_000);
      for (const [args, waiting] of [
        [['check', '--quiet'], 'check the search index'],
        [['import', '-', '--format', 'csv', '--quiet'], 'write'],
      ] as const) {
        const result = await runCli([...args], { env, input: 'name,age,city\nAda,36,London\n' });
        assert.equal(result.code, 1, `${args[0]}: ${result.stderr}`);
        assert.doesNotMatch(result.stderr, /problem:|does not match/, args[0]);
        assert.match(
          result.stderr.trimEnd().split('\n').at(-1) ?? '',
          new RegExp(
            `^user-records: another process held the write lock of .*users\\.db for longer than DATABASE_TIMEOUT_MS \\(300 ms\\) while this command waited to ${waiting}; try again once it is done, or raise DATABASE_TIMEOUT_MS$`,
          ),
          args[0],
        );
      }
      holder.kill('SIGKILL');
      const checked = await runCli(['check'], { env });
      assert.equal(checked.code, 0, checked.stderr);
      assert.match(checked.stdout, /^ok: 1 records/);
    } finally {
      if (holder?.exitCode === null) holder.kill('SIGKILL');
      data.cleanup();
    }
  });

  it('a write waits DATABASE_TIMEOUT_MS from its asking, queued behind another or not; a 503 is never stored, a 200 always', async () => {
    const timeoutMs = 2000;
    const data = tempDir();
    const path = join(data.dir, 'users.db');
    const server = await startServer({ DATABASE_URL: path, DATABASE_TIMEOUT_MS: String(timeoutMs) });
    let holder: ChildProcess | undefined;
    try {
      await createUser(server.url, 'Ada', 36, 'London');
      // Held for longer than two timeouts: the first write's batch waits one whole timeout, and the
      // writes asked for meanwhile queue behind it. Then released while writes keep coming, so
      // some deadlines fall at the moment the lock comes free.
      holder = await lockHolder(path, timeoutMs * 2.3);
      const answers: Array<Promise<{ name: string; status: number; ms: number }>> = [];
      const until = performance.now() + timeoutMs * 2.3 + 500;
      for (let i = 0; performance.now() < until && i < 100; i++) {
        const name = `Queued${i}`;
        const asked = performance.now();
        answers.push(
          call(server.url, 'POST', `/users?name=${name}&age=1&city=C`).then((answer) => {
            if (answer.status !== 200) {
              const problem = assertProblem(answer, 503);
              assert.equal(problem.type, '/problems/unavailable');
              assert.match(problem.detail, /It was not stored; retry shortly\.$/);
            }
            return { name, status: answer.status, ms: performance.now() - asked };
          }),
        );
        await pause(150);
      }
      const settled = await Promise.all(answers);
      const statuses = new Set(settled.map((answer) => answer.status));
      assert.deepEqual([...statuses].sort(), [200, 503], 'both outcomes were reached');
      // Not a measure of speed: a write queued behind a batch that waited was given a whole new
      // wait, and answered close to two timeouts after it was asked.
      const slowest = settled.reduce((a, b) => (b.ms > a.ms ? b : a));
      assert.ok(slowest.ms < timeoutMs + 1500, `${slowest.name} answered ${slowest.status} after ${slowest.ms} ms`);
      const stored = (await names(server.url)).filter((name) => name !== 'Ada').sort();
      const answered = settled.filter((answer) => answer.status === 200).map((answer) => answer.name);
      assert.deepEqual(stored, answered.sort());
    } finally {
      if (holder?.exitCode === null) holder.kill('SIGKILL');
      await server.stop();
      data.cleanup();
    }
  });

  it('writes wait for it off the event loop: reads and /healthz answer while a write waits', async () => {
    const data = tempDir();
    const path = join(data.dir, 'users.db');
    const server = await startServer({ DATABASE_URL: path, DATABASE_TIMEOUT_MS: '3000' });
    let holder: ChildProcess | undefined;
    try {
      await createUser(server.url, 'Ada', 36, 'London');
      // A second process takes the write lock and stalls, as a stopped or hung writer would.
      holder = spawn(
        process.execPath,
        [
          '-e',
          `const db = new (require('better-sqlite3'))(${JSON.stringify(path)}); db.exec('BEGIN IMMEDIATE'); console.log('locked'); setTimeout(() => {}, 60000);`,
        ],
        { cwd: new URL('../..', import.meta.url).pathname, stdio: ['ignore', 'pipe', 'inherit'] },
      );
      await new Promise<void>((resolve) => holder?.stdout?.once('data', () => resolve()));

      const order: string[] = [];
      const write = call(server.url, 'POST', '/users?name=Waits&age=1&city=C').then((answer) => {
        order.push(`write ${answer.status}`);
        return answer;
      });
      await pause(100); // the write is now waiting for the lock
      const reads = await Promise.all([
        call(server.url, 'GET', '/healthz'),
        call(server.url, 'GET', '/users/1'),
        call(server.url, 'GET', '/users?name=Ada'),
      ]);
      order.push(`reads ${reads.map((answer) => answer.status).join(',')}`);
      const written = await write;
      assert.deepEqual(order, ['reads 200,200,200', 'write 503'], 'the reads had to wait for the write');
      assert.equal(assertProblem(written, 503).type, '/problems/unavailable');
      holder.kill('SIGKILL');
      assert.equal((await call(server.url, 'POST', '/users?name=After&age=1&city=C')).status, 200);
    } finally {
      if (holder?.exitCode === null) holder.kill('SIGKILL');
      await server.stop();
      data.cleanup();
    }
  });
});
