import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { openConnection } from '../../src/store/sqlite/connection.ts';
import { startServer, tempDir } from '../helpers/server.ts';

const STRACE = '/usr/bin/strace';

// An answered write must be on disk, not only in the OS cache: SIGKILL tests cannot see the
// difference (the kernel keeps the cache), so this checks the settings and counts real fsyncs.
describe('durability of an answered write', () => {
  it('every SQLite connection (the writer’s among them) runs in WAL mode with synchronous=FULL', async () => {
    const data = tempDir();
    const db = openConnection(join(data.dir, 'users.db'), { busyTimeoutMs: 0, migrate: true });
    try {
      assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
      assert.equal(db.pragma('synchronous', { simple: true }), 2);
      assert.equal(db.pragma('secure_delete', { simple: true }), 1);
    } finally {
      db.close();
      data.cleanup();
    }
  });

  it('each sequential write is fsync’d before it is answered (counted with strace)', async (t) => {
    if (!existsSync(STRACE)) {
      if (process.env.CI === 'true') assert.fail(`${STRACE} is missing; .ci/run installs it`);
      t.skip(`${STRACE} is not installed: apt-get install -y strace`);
      return;
    }
    const data = tempDir();
    const trace = join(data.dir, 'trace.txt');
    const server = await startServer({ DATABASE_URL: join(data.dir, 'users.db') }, 30_000, [
      STRACE,
      '-f',
      '-qq',
      '-e',
      'trace=fsync,fdatasync',
      '-o',
      trace,
    ]);
    try {
      const serverPid = Number(/"pid":(\d+)/.exec(server.logs.find((line) => line.includes('"pid"')) ?? '')?.[1]);
      assert.ok(serverPid > 0, 'no pid in the server log');
      const syncs = () =>
        readFileSync(trace, 'utf8')
          .split('\n')
          .filter((line) => /fd(ata)?sync|fsync/.test(line));
      const before = syncs().length;
      const writes = 20;
      for (let i = 0; i < writes; i++) {
        const answer = await fetch(`${server.url}/users?name=s${i}&age=1&city=c`, { method: 'POST' });
        assert.equal(answer.status, 200);
        // The answer is in hand: its fsync must already be in the trace.
        assert.ok(syncs().length - before >= i + 1, `write ${i + 1} was answered before any fsync of its own`);
      }
      process.kill(serverPid, 'SIGTERM');
      console.log(`# fsync: ${syncs().length - before} fsync calls for ${writes} sequential writes`);
    } finally {
      await server.stop('SIGTERM');
      data.cleanup();
    }
  });
});
