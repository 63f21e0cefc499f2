// The crash suite: 20 concurrent writers (creates, PATCHes, PUTs, DELETEs), the server SIGKILLed at
// a random moment, restarted on the same database, checked, many times over. After every restart
// every answered write is there exactly once (or changed only by a later write), nothing deleted
// comes back, ids are unique and increase, and SQLite's file passes its integrity check.
// Replay a failure with CRASH_SEED=<the seed it printed>; SUITE_SCALE=long runs more rounds.
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { describe, it } from 'node:test';
import { openBetterSqlite } from '../../src/store/sqlite/native-objects.ts';
import { BACKENDS } from '../helpers/backends.ts';
import { call } from '../helpers/http.ts';
import { waitFor } from '../helpers/load.ts';
import { assertNotLogged } from '../helpers/log-check.ts';
import { scaled } from '../helpers/scale.ts';
import { type RunningServer, startServer } from '../helpers/server.ts';
import { CrashModel, type Listed, seededRandom, startMixedWriters } from '../helpers/writers.ts';

const SEED = Number(process.env.CRASH_SEED ?? randomInt(2 ** 31));
/** SIGKILL rounds per backend (PostgreSQL's server starts slower, so it gets fewer in the short form). */
const ROUNDS: Record<string, number> = { sqlite: scaled(5, 30), postgresql: scaled(3, 25) };
const WRITERS = 20;
/** The most requests one writer sends in a round: the kill comes long before. */
const PER_WRITER = 400;
/** Answered writes each round must have before its kill, so that every round checks something. */
const MIN_PER_ROUND = 10;

/** Opens the killed server's file directly: integrity, then the rows it holds, in id order. */
function inspectSqlite(path: string): Listed[] {
  const db = openBetterSqlite(path, { fileMustExist: true, readonly: true });
  try {
    assert.deepEqual(db.pragma('integrity_check', { simple: true }), 'ok', `integrity_check of ${path}`);
    assert.deepEqual(db.pragma('foreign_key_check'), [], `foreign_key_check of ${path}`);
    const rows = db.prepare('SELECT id, name, age, city FROM users ORDER BY id').all() as Listed[];
    return rows.map((row) => ({ ...row, age: String(row.age) }));
  } finally {
    db.close();
  }
}

async function listAll(url: string): Promise<Listed[]> {
  const answer = await call(url, 'GET', '/users?fields=id,name,age,city');
  assert.equal(answer.status, 200, answer.text);
  return answer.json.data as Listed[];
}

for (const [index, backend] of BACKENDS.entries()) {
  const rounds = ROUNDS[backend.name] ?? 1;
  describe(`crash [${backend.name}]`, { timeout: scaled(180_000, 900_000), skip: backend.skip }, () => {
    it(`${rounds} SIGKILLs under ${WRITERS} concurrent writers lose and duplicate nothing`, async (t) => {
      const seed = SEED + index;
      t.diagnostic(`seed ${SEED} (replay: CRASH_SEED=${SEED})`);
      const random = seededRandom(seed);
      const tag = `Zk${seed.toString(36).padStart(6, '0')}${backend.name[0]}`;
      const database = await backend.fresh();
      // No rate limit: every writer sends from one address.
      const env = { DATABASE_URL: database.url, RATE_LIMIT: 'off' };
      const model = new CrashModel();
      const logs: string[][] = [];
      let server: RunningServer | undefined;
      let fileRows: Listed[] | undefined;
      let killedInFlight = 0;
      const perRound: number[] = [];
      try {
        for (let round = 0; round <= rounds; round++) {
          server = await startServer(env);
          logs.push(server.logs);
          const listing = await listAll(server.url);
          if (fileRows !== undefined) assert.deepEqual(listing, fileRows, 'the listing differs from the file');
          const faults = model.reconcile(listing);
          assert.deepEqual(faults, [], `after restart ${round} (seed ${SEED})`);
          assert.deepEqual(model.violations, [], `answers in round ${round} (seed ${SEED})`);
          if (round === rounds) break;

          const load = startMixedWriters(server.url, model, {
            writers: WRITERS,
            perWriter: PER_WRITER,
            tag: `${tag}r${round}`,
            random,
          });
          const wait = 50 + Math.floor(random() * 551);
          await new Promise((resolve) => setTimeout(resolve, wait));
          // The kill comes at a random moment, but not before this round has some answered writes to
          // check: on a busy machine the random wait alone may be over before ten are (bounded).
          await waitFor(() => load.answered() >= MIN_PER_ROUND, 30_000);
          await server.stop('SIGKILL');
          await load.stop();
          perRound.push(load.answered());
          killedInFlight += model.pendingCreates.size + model.maybe.size;
          fileRows = backend.name === 'sqlite' ? inspectSqlite(database.url) : undefined;
        }
        assert.equal(await server?.stop('SIGTERM'), 0, 'the last server did not stop cleanly');

        const answered = perRound.reduce((sum, count) => sum + count, 0);
        assert.ok(answered >= rounds * MIN_PER_ROUND, `only ${answered} writes were answered in ${rounds} rounds`);
        assert.ok(model.answered.patch + model.answered.delete > 0, 'no update or delete was answered');
        const allLogs = logs.flat();
        const sample = [...model.sentValues].filter((_, i) => i % 50 === 0);
        assertNotLogged(allLogs, [`${tag}r`, ...sample]);
        const statuses = [...model.statuses].map(([status, count]) => `${status}×${count}`).join(' ');
        const figures =
          `crash [${backend.name}] seed ${SEED}: ${rounds} SIGKILL rounds survived, ${answered} writes answered and checked ` +
          `(${model.answered.create} creates, ${model.answered.patch} patches, ${model.answered.put} puts, ` +
          `${model.answered.delete} deletes), ${killedInFlight} writes in flight at a kill, ` +
          `${model.records.size} records at the end, per round ${Math.min(...perRound)}-${Math.max(...perRound)}, ` +
          `statuses ${statuses}, ${allLogs.length} log lines clean`;
        t.diagnostic(figures);
      } finally {
        await server?.stop('SIGKILL');
        await database.drop();
      }
    });
  });
}
