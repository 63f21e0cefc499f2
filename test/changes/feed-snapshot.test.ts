import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import { ChangeFeed, type Follower } from '../../src/changes/feed.ts';
import { parseDatabaseUrl } from '../../src/config/load.ts';
import { openDatabase } from '../../src/store/database.ts';
import { openBetterSqlite } from '../../src/store/sqlite/native-objects.ts';
import type { Change, Commit, UserStore } from '../../src/store/store.ts';
import { tempDir } from '../helpers/server.ts';

const dir = tempDir();
after(() => dir.cleanup());

/** A follower that keeps what it is given, and why it was ended. */
interface Keeper extends Follower {
  last: number;
  ended: boolean;
  versions: number[];
  why: string | undefined;
}

function keeper(last: number): Keeper {
  return {
    last,
    ended: false,
    versions: [],
    why: undefined,
    take(changes: readonly Change[]) {
      for (const change of changes) {
        if (change.version <= this.last) continue;
        this.versions.push(change.version);
        this.last = change.version;
      }
    },
    end(why: string) {
      this.ended = true;
      this.why = why;
    },
  };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

// SQLite's reads of one turn of the event loop share one snapshot (sqlite/store.ts). Another
// process's commit, and this process's own handed out in the same turn, are newer than it: a read
// of the log in that turn sees the database's version below the feed's position. That is not a
// restore (a restore always starts a new history); ending every stream for it cut two processes'
// subscribers off at random under load.
it("a read of the log that shares its turn's snapshot with an earlier read, behind a commit the feed was handed since, is read again in a later turn, not taken for a restore", async () => {
  const path = `${dir.dir}/users.db`;
  const database = parseDatabaseUrl(path);
  if (typeof database === 'string') throw new Error(database);
  const store = await openDatabase({ database, databaseTimeoutMs: 5000, databasePoolSize: 2 }).openStore();
  const other = openBetterSqlite(path);
  try {
    const ada = await store.create({ name: 'Ada', age: 36, city: 'London' });
    // The feed is handed this store's commits only when the test says (as if they came from its writer now).
    let handOut: ((commit: Commit) => void) | undefined;
    const watched = new Proxy(store, {
      get(target, name) {
        if (name === 'onCommit') return (listener: (commit: Commit) => void) => (handOut = listener);
        const value: unknown = Reflect.get(target, name, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    }) as UserStore;
    const feed = new ChangeFeed(watched);
    const follower = keeper(1);
    await feed.follow(follower, async (changes) => follower.take(changes));
    await turn();

    // One turn: a read opens its snapshot (version 1); a commit lands (version 2) and is handed to
    // the feed; then the feed reads the log, in that same snapshot.
    assert.equal((await store.get(ada.id))?.version, 1);
    other.exec(`UPDATE users SET age = 37, version = 2 WHERE id = ${ada.id};
      UPDATE store_version SET version = 2;
      INSERT INTO changes (version, kind, id, name, age, city, created_at, updated_at, record_version, at)
        SELECT 2, 'updated', id, name, age, city, created_at, updated_at, version, 0 FROM users WHERE id = ${ada.id};`);
    const [logged] = (await store.changes(0, 0)).changes;
    assert.equal(logged, undefined, 'the snapshot of this turn does not show it yet');
    handOut?.({
      changes: [{ version: 2, kind: 'updated', user: { ...ada, age: 37, version: 2 }, at: new Date(0) }],
    });
    feed.wake();
    for (let i = 0; i < 5; i++) await turn();
    assert.equal(follower.why, undefined, 'the follower goes on');
    assert.deepEqual(follower.versions, [2]);

    // And the next change of another process reaches it.
    other.exec(`UPDATE store_version SET version = 3;
      INSERT INTO changes (version, kind, id, name, age, city, created_at, updated_at, record_version, at)
        SELECT 3, 'deleted', id, name, age, city, created_at, updated_at, version, 0 FROM users WHERE id = ${ada.id};
      DELETE FROM users WHERE id = ${ada.id};`);
    feed.wake();
    for (let i = 0; i < 5 && follower.versions.length < 2; i++) await turn();
    assert.deepEqual(follower.versions, [2, 3]);
    feed.stop();
  } finally {
    other.close();
    await store.close();
  }
});
