import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { openBetterSqlite } from '../../src/store/sqlite/native-objects.ts';
import pg from 'pg';
import { parseDatabaseUrl } from '../../src/config/load.ts';
import { fingerprint } from '../../src/store/fingerprint.ts';
import { openDatabase } from '../../src/store/database.ts';
import type { Commit, IdempotencyKey, ListFilter, User, UserInput, UserStore } from '../../src/store/store.ts';
import { BACKENDS, type Database as TestDatabase } from '../helpers/backends.ts';

/** Opens the store a DATABASE_URL names, as the server does. */
async function openUrl(url: string, changesRetentionMs?: number): Promise<UserStore> {
  const database = parseDatabaseUrl(url);
  if (typeof database === 'string') throw new Error(database);
  return openDatabase({ database, databaseTimeoutMs: 5000, databasePoolSize: 5, changesRetentionMs }).openStore();
}

const databases: TestDatabase[] = [];
after(async () => {
  for (const database of databases) await database.drop();
});

interface StoreBackend {
  name: string;
  skip: string | false;
  /** The URL of a new, empty database that outlives the stores opened on it. */
  fresh: () => Promise<string>;
}

// Every backend that keeps its data; each test opens its own database.
const persistent: StoreBackend[] = BACKENDS.map((backend) => ({
  name: backend.name,
  skip: backend.skip,
  fresh: async () => {
    const database = await backend.fresh();
    databases.push(database);
    return database.url;
  },
}));
// The contract every backend keeps, SQLite's memory database included.
const backends: StoreBackend[] = [
  ...persistent,
  { name: 'sqlite :memory:', skip: false, fresh: async () => ':memory:' },
];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const fieldsOf = (user: User): UserInput => ({ name: user.name, age: user.age, city: user.city });

/** The seed for the list tests; indexes into it name the expected records. */
const PEOPLE: UserInput[] = [
  { name: 'Ada', age: 36, city: 'London' },
  { name: 'Ben', age: 41, city: 'Leeds' },
  { name: 'Ada', age: 41, city: 'Paris' },
  { name: 'Cy', age: 36, city: 'London' },
  { name: 'Ada', age: 36, city: 'London' },
  { name: 'Dee', age: 0, city: 'York' },
];

interface ListRow {
  name: string;
  filter: Omit<ListFilter, 'afterId'>;
  /** Index in PEOPLE of the record whose id becomes afterId. */
  after?: number;
  expected: number[];
}

const listRows: ListRow[] = [
  { name: 'no filter: everything in id order', filter: {}, expected: [0, 1, 2, 3, 4, 5] },
  { name: 'name', filter: { name: 'Ada' }, expected: [0, 2, 4] },
  { name: 'name matches exactly (case)', filter: { name: 'ada' }, expected: [] },
  { name: 'age', filter: { age: 36 }, expected: [0, 3, 4] },
  { name: 'age 0 is a filter, not "no filter"', filter: { age: 0 }, expected: [5] },
  { name: 'city', filter: { city: 'London' }, expected: [0, 3, 4] },
  { name: 'name and age', filter: { name: 'Ada', age: 41 }, expected: [2] },
  { name: 'name, age and city', filter: { name: 'Ada', age: 36, city: 'London' }, expected: [0, 4] },
  { name: 'no match', filter: { name: 'Nobody' }, expected: [] },
  { name: 'afterId', filter: {}, after: 1, expected: [2, 3, 4, 5] },
  { name: 'afterId of the last record', filter: {}, after: 5, expected: [] },
  { name: 'limit', filter: { limit: 2 }, expected: [0, 1] },
  { name: 'limit above the count', filter: { limit: 100 }, expected: [0, 1, 2, 3, 4, 5] },
  { name: 'afterId and limit', filter: { limit: 2 }, after: 0, expected: [1, 2] },
  { name: 'filter, afterId and limit', filter: { name: 'Ada', limit: 1 }, after: 0, expected: [2] },
  { name: 'city and afterId', filter: { city: 'London' }, after: 3, expected: [4] },
];

for (const backend of backends) {
  // Reads only: the rows share one store, seeded once.
  describe(`store [${backend.name}]: list`, { skip: backend.skip }, () => {
    let store: UserStore;
    let ids: number[];
    before(async () => {
      store = await openUrl(await backend.fresh());
      ids = [];
      for (const person of PEOPLE) ids.push((await store.create(person)).id);
    });
    after(() => store.close());

    for (const row of listRows) {
      it(row.name, async () => {
        const filter: ListFilter = { ...row.filter };
        if (row.after !== undefined) filter.afterId = ids[row.after];
        const users = await store.list(filter);
        assert.deepEqual(
          users.map((user) => user.id),
          row.expected.map((index) => ids[index]),
        );
        assert.deepEqual(
          users.map(fieldsOf),
          row.expected.map((index) => PEOPLE[index]),
        );
      });
    }

    it('on an empty store is an empty array', async () => {
      const empty = await openUrl(await backend.fresh());
      try {
        assert.deepEqual(await empty.list({}), []);
      } finally {
        await empty.close();
      }
    });
  });
}

for (const backend of backends) {
  describe(`store [${backend.name}]`, { skip: backend.skip }, () => {
    let store: UserStore;
    beforeEach(async () => {
      store = await openUrl(await backend.fresh());
    });
    afterEach(() => store.close());

    it('create returns increasing ids, version 1 and equal createdAt/updatedAt dates', async () => {
      const start = Date.now();
      const first = await store.create({ name: 'Ada', age: 36, city: 'London' });
      const second = await store.create({ name: 'Ben', age: 41, city: 'Leeds' });
      const end = Date.now();
      assert.ok(Number.isSafeInteger(first.id) && first.id >= 1, `first id ${first.id}`);
      assert.ok(second.id > first.id, `ids ${first.id}, ${second.id}`);
      for (const user of [first, second]) {
        assert.equal(user.version, 1);
        assert.ok(user.createdAt instanceof Date && user.updatedAt instanceof Date);
        assert.equal(user.createdAt.getTime(), user.updatedAt.getTime());
        assert.ok(user.createdAt.getTime() >= start && user.createdAt.getTime() <= end);
      }
      assert.deepEqual(fieldsOf(first), { name: 'Ada', age: 36, city: 'London' });
      assert.deepEqual(await store.get(first.id), first);
      assert.deepEqual(await store.get(second.id), second);
    });

    it('get of a missing id is undefined', async () => {
      const user = await store.create({ name: 'Ada', age: 36, city: 'London' });
      assert.equal(await store.get(user.id + 1), undefined);
      assert.equal(await store.get(987_654), undefined);
    });

    it('update of some fields bumps version and updatedAt and keeps the others', async () => {
      const created = await store.create({ name: 'Ada', age: 36, city: 'London' });
      await sleep(5);
      const first = await store.update(created.id, { city: 'Paris' });
      assert.ok(first.ok);
      assert.equal(first.user.id, created.id);
      assert.deepEqual(fieldsOf(first.user), { name: 'Ada', age: 36, city: 'Paris' });
      assert.equal(first.user.version, 2);
      assert.equal(first.user.createdAt.getTime(), created.createdAt.getTime());
      assert.ok(first.user.updatedAt > created.updatedAt, `${first.user.updatedAt.toISOString()} not later`);
      await sleep(5);
      const second = await store.update(created.id, { name: 'Ada L.', age: 37 });
      assert.ok(second.ok);
      assert.deepEqual(fieldsOf(second.user), { name: 'Ada L.', age: 37, city: 'Paris' });
      assert.equal(second.user.version, 3);
      assert.ok(second.user.updatedAt > first.user.updatedAt);
      assert.deepEqual(await store.get(created.id), second.user);
    });

    it('update and remove of a missing id answer not-found', async () => {
      const user = await store.create({ name: 'Ada', age: 36, city: 'London' });
      assert.deepEqual(await store.update(user.id + 1, { city: 'Paris' }), { ok: false, reason: 'not-found' });
      assert.deepEqual(await store.remove(user.id + 1), { ok: false, reason: 'not-found' });
      assert.deepEqual(await store.list({}), [user]);
    });

    it('a precondition admits the contents its fingerprints name (or any); another answers precondition-failed and changes nothing', async () => {
      const created = await store.create({ name: 'Ada', age: 36, city: 'London' });
      const changed = await store.update(created.id, { age: 37 }, { fingerprints: [fingerprint(created)] });
      assert.ok(changed.ok);
      assert.equal(changed.user.version, 2);

      const stale = await store.update(created.id, { age: 99 }, { fingerprints: [fingerprint(created)] });
      assert.deepEqual(stale, { ok: false, reason: 'precondition-failed' });
      assert.deepEqual(await store.remove(created.id, { fingerprints: [] }), {
        ok: false,
        reason: 'precondition-failed',
      });
      assert.deepEqual(await store.get(created.id), changed.user);
      // The same version with other values (as after a restore) is other content.
      const other = { ...changed.user, city: 'Paris' };
      assert.deepEqual(await store.update(created.id, { age: 1 }, { fingerprints: [fingerprint(other)] }), stale);
      const either = await store.update(
        created.id,
        { age: 38 },
        {
          fingerprints: [fingerprint(created), fingerprint(changed.user)],
        },
      );
      assert.ok(either.ok);
      const any = await store.update(created.id, { age: 39 }, { anyVersion: true });
      assert.ok(any.ok);
      assert.equal(any.user.version, 4);
    });

    it('remove returns the removed record, which is gone afterwards', async () => {
      const keep = await store.create({ name: 'Ada', age: 36, city: 'London' });
      const drop = await store.create({ name: 'Ben', age: 41, city: 'Leeds' });
      const removed = await store.remove(drop.id, { fingerprints: [fingerprint(drop)] });
      assert.deepEqual(removed, { ok: true, user: drop });
      assert.equal(await store.get(drop.id), undefined);
      assert.deepEqual(await store.list({}), [keep]);
      assert.deepEqual(await store.remove(drop.id), { ok: false, reason: 'not-found' });
    });

    it('count follows creates and removes', async () => {
      assert.equal(await store.count(), 0);
      const first = await store.create({ name: 'Ada', age: 36, city: 'London' });
      await store.create({ name: 'Ben', age: 41, city: 'Leeds' });
      assert.equal(await store.count(), 2);
      await store.remove(first.id);
      assert.equal(await store.count(), 1);
    });

    it('ids are never reused, even after removing the newest record', async () => {
      await store.create({ name: 'Ada', age: 36, city: 'London' });
      const newest = await store.create({ name: 'Ben', age: 41, city: 'Leeds' });
      assert.ok((await store.remove(newest.id)).ok);
      const next = await store.create({ name: 'Cy', age: 5, city: 'York' });
      assert.ok(next.id > newest.id, `id ${next.id} reuses or precedes the removed ${newest.id}`);
    });

    it('200 creates started in the same tick all resolve, with distinct ids in call order', async () => {
      const inputs = Array.from({ length: 200 }, (_, i) => ({ name: `n${i}`, age: i % 151, city: `c${i % 7}` }));
      const users = await Promise.all(inputs.map((input) => store.create(input)));
      assert.deepEqual(users.map(fieldsOf), inputs);
      for (let i = 1; i < users.length; i++) {
        assert.ok((users[i] as User).id > (users[i - 1] as User).id, `id at ${i} is not above the one before`);
      }
      assert.equal(new Set(users.map((user) => user.id)).size, 200);
      assert.deepEqual(await store.list({}), users);
    });

    it('writes of one batch apply in call order', async () => {
      const user = await store.create({ name: 'Ada', age: 36, city: 'London' });
      const results = await Promise.all([
        store.update(user.id, { city: 'Paris' }),
        store.remove(user.id),
        store.update(user.id, { city: 'Rome' }),
      ]);
      const [updated, removed, late] = results;
      assert.ok(updated?.ok && removed?.ok);
      assert.equal(removed.user.city, 'Paris');
      assert.equal(removed.user.version, 2);
      assert.deepEqual(late, { ok: false, reason: 'not-found' });
      assert.deepEqual(await store.list({}), []);
    });

    it('a write that throws inside a batch rejects alone; the rest of the batch commits', async () => {
      const target = await store.create({ name: 'Ada', age: 36, city: 'London' });
      // The store trusts validated input; age 999 breaks the CHECK constraint and stands for a failing job.
      const settled = await Promise.allSettled([
        store.create({ name: 'Ben', age: 41, city: 'Leeds' }),
        store.update(target.id, { age: 999, city: 'Nowhere' }),
        store.update(target.id, { city: 'Paris' }),
        store.create({ name: 'Cy', age: 5, city: 'York' }),
      ]);
      assert.deepEqual(
        settled.map((outcome) => outcome.status),
        ['fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
      );
      const failure = settled[1] as PromiseRejectedResult;
      assert.match(String(failure.reason), /check constraint/i);
      const stored = await store.list({});
      assert.deepEqual(stored.map(fieldsOf), [
        { name: 'Ada', age: 36, city: 'Paris' },
        { name: 'Ben', age: 41, city: 'Leeds' },
        { name: 'Cy', age: 5, city: 'York' },
      ]);
      assert.equal(stored[0]?.version, 2, 'the failed update must not have bumped the version');
    });

    it('each committed change raises version() by one and is reported to onCommit, in order', async () => {
      const commits: Commit[] = [];
      store.onCommit((commit) => commits.push(commit));
      const start = await store.version();
      const ada = await store.create({ name: 'Ada', age: 36, city: 'London' });
      const ben = await store.create({ name: 'Ben', age: 41, city: 'Leeds' });
      const [changed, removed, missing] = await Promise.all([
        store.update(ada.id, { city: 'Paris' }),
        store.remove(ben.id),
        store.remove(ben.id + 100),
      ]);
      assert.ok(changed?.ok && removed?.ok && missing?.ok === false);
      const seen = commits.map((commit) => commit.changes.map(({ version, kind, user }) => ({ version, kind, user })));
      assert.deepEqual(seen, [
        [{ version: start + 1, kind: 'created', user: ada }],
        [{ version: start + 2, kind: 'created', user: ben }],
        [
          { version: start + 3, kind: 'updated', user: changed.user },
          { version: start + 4, kind: 'deleted', user: ben },
        ],
      ]);
      for (const change of commits.flatMap((commit) => commit.changes)) assert.ok(change.at instanceof Date);
      assert.equal(await store.version(), start + 4);
      // A write that changes nothing (a refusal) leaves the version and tells no listener.
      assert.deepEqual(await store.update(ada.id, { age: 1 }, { fingerprints: [] }), {
        ok: false,
        reason: 'precondition-failed',
      });
      assert.equal(await store.version(), start + 4);
      assert.equal(commits.length, 3);
    });

    describe('createOnce (Idempotency-Key)', () => {
      const ada: UserInput = { name: 'Ada', age: 36, city: 'London' };
      const key = (fingerprint: string): IdempotencyKey => ({ key: 'key-1', fingerprint });

      it('stores once; the same fingerprint replays the first record, another is refused', async () => {
        const first = await store.createOnce(ada, key('f1'));
        assert.ok(first.ok && !first.replayed);
        assert.deepEqual(first.user, await store.get(first.user.id));
        const version = await store.version();
        assert.deepEqual(await store.createOnce(ada, key('f1')), { ok: true, user: first.user, replayed: true });
        assert.deepEqual(await store.createOnce({ ...ada, age: 37 }, key('f2')), { ok: false, reason: 'key-reused' });
        assert.deepEqual(await store.list({}), [first.user]);
        assert.equal(await store.version(), version, 'a replay or refusal is a read');
        const other = await store.createOnce(ada, { key: 'key-2', fingerprint: 'f1' });
        assert.ok(other.ok && !other.replayed && other.user.id > first.user.id, 'keys are independent');
      });

      it('a replay returns the record as it is now; once it is removed, the key is refused and keeps none of its values', async () => {
        const first = await store.createOnce(ada, key('f1'));
        assert.ok(first.ok);
        const changed = await store.update(first.user.id, { city: 'Paris' });
        assert.ok(changed.ok);
        assert.deepEqual(await store.createOnce(ada, key('f1')), { ok: true, user: changed.user, replayed: true });
        assert.deepEqual(await store.list({}), [changed.user]);
        assert.ok((await store.remove(first.user.id)).ok);
        assert.deepEqual(await store.createOnce(ada, key('f1')), { ok: false, reason: 'record-deleted' });
        assert.deepEqual(await store.list({}), []);
      });

      it('concurrent calls with one key store one record and report one change', async () => {
        const commits: Commit[] = [];
        store.onCommit((commit) => commits.push(commit));
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) => store.createOnce(ada, key(i < 8 ? 'f1' : 'f2'))),
        );
        const created = results.filter((result) => result.ok && !result.replayed);
        assert.equal(created.length, 1);
        const user = (created[0] as { user: User }).user;
        assert.deepEqual(results.slice(1, 8), Array(7).fill({ ok: true, user, replayed: true }));
        assert.deepEqual(results.slice(8), Array(2).fill({ ok: false, reason: 'key-reused' }));
        assert.deepEqual(await store.list({}), [user]);
        // Replays inside the write transaction must not reach caches as changes (their snapshot may be old).
        assert.deepEqual(
          commits.flatMap((commit) => commit.changes).map(({ kind, user }) => ({ kind, user })),
          [{ kind: 'created', user }],
        );
      });

      it('a failing write in the same batch leaves keyed creates, refusals included, as results', async () => {
        const target = await store.create({ name: 'Ben', age: 41, city: 'Leeds' });
        const [first, failed, reused, replayed] = await Promise.allSettled([
          store.createOnce(ada, key('f1')),
          store.update(target.id, { age: 999 }),
          store.createOnce(ada, key('f2')),
          store.createOnce(ada, key('f1')),
        ]);
        assert.equal(failed.status, 'rejected');
        assert.ok(first.status === 'fulfilled' && first.value.ok && !first.value.replayed);
        assert.deepEqual(reused, { status: 'fulfilled', value: { ok: false, reason: 'key-reused' } });
        assert.deepEqual(replayed, {
          status: 'fulfilled',
          value: { ok: true, user: first.value.user, replayed: true },
        });
        assert.equal((await store.list({ name: 'Ada' })).length, 1);
      });
    });

    it('ping resolves', async () => {
      await store.ping();
    });
  });
}

for (const backend of persistent) {
  describe(`store that keeps its data [${backend.name}]`, { skip: backend.skip }, () => {
    it("wakes every watcher on another process's commit, through one watch of the database", async () => {
      const url = await backend.fresh();
      const watched = await openUrl(url);
      const other = await openUrl(url);
      try {
        const woken = { feed: 0, hooks: 0 };
        const stopFeed = watched.watch(() => woken.feed++);
        const stopHooks = watched.watch(() => woken.hooks++);
        // Give the watch its first look (SQLite reads the version every 50 ms; PostgreSQL LISTENs).
        await new Promise((resolve) => setTimeout(resolve, 300));
        const before = { ...woken };
        await other.create({ name: 'Elsewhere', age: 1, city: 'Away' });
        for (let i = 0; i < 200 && (woken.feed === before.feed || woken.hooks === before.hooks); i++) {
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        assert.ok(woken.feed > before.feed && woken.hooks > before.hooks, `woken ${JSON.stringify(woken)}`);
        stopFeed();
        stopHooks();
      } finally {
        await other.close();
        await watched.close();
      }
    });

    it("wakes a watcher for another process's commit that lands before the watch's first look", async () => {
      const url = await backend.fresh();
      const watched = await openUrl(url);
      const other = await openUrl(url);
      try {
        let woken = 0;
        const stop = watched.watch(() => woken++);
        if (backend.name === 'sqlite') {
          // Another process's commit as the watch sees it, the change version moved, made here before
          // this thread's event loop turns again: the watch's first look can only come after it.
          const file = openBetterSqlite(url);
          try {
            file.prepare('UPDATE store_version SET version = version + 1').run();
          } finally {
            file.close();
          }
        } else {
          await other.create({ name: 'Early', age: 1, city: 'Away' });
        }
        for (let i = 0; i < 200 && woken === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
        assert.ok(woken > 0, 'no wake for the commit');
        stop();
      } finally {
        await other.close();
        await watched.close();
      }
    });

    it('reopening keeps the data and the id sequence', async () => {
      const url = await backend.fresh();
      const store = await openUrl(url);
      const ada = await store.create({ name: 'Ada', age: 36, city: 'London' });
      const ben = await store.create({ name: 'Ben', age: 41, city: 'Leeds' });
      const changed = await store.update(ada.id, { city: 'Paris' });
      assert.ok(changed.ok);
      assert.ok((await store.remove(ben.id)).ok);
      await store.close();

      const reopened = await openUrl(url);
      try {
        assert.deepEqual(await reopened.list({}), [changed.user]);
        const cy = await reopened.create({ name: 'Cy', age: 5, city: 'York' });
        assert.ok(cy.id > ben.id, `id ${cy.id} reuses or precedes the removed ${ben.id}`);
      } finally {
        await reopened.close();
      }
    });

    it('close commits a write still queued, and a second close is harmless', async () => {
      const url = await backend.fresh();
      const store = await openUrl(url);
      const pending = store.create({ name: 'Ada', age: 36, city: 'London' });
      await store.close();
      const user = await pending;
      await store.close();
      await assert.rejects(store.ping());

      const reopened = await openUrl(url);
      try {
        assert.deepEqual(await reopened.list({}), [user]);
      } finally {
        await reopened.close();
      }
    });

    it('stores opened at the same moment apply each migration once', async () => {
      const url = await backend.fresh();
      const stores = await Promise.all(Array.from({ length: 6 }, () => openUrl(url)));
      const created = await Promise.all(stores.map((store, i) => store.create({ name: `n${i}`, age: i, city: 'c' })));
      assert.equal(new Set(created.map((user) => user.id)).size, stores.length);
      for (const store of stores) await store.close();
      assert.deepEqual(await migrationVersions(url), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    });

    it('two stores on one database changing the same records in opposite orders both succeed', async () => {
      const url = await backend.fresh();
      const [a, b] = await Promise.all([openUrl(url), openUrl(url)]);
      try {
        const [x, y] = await Promise.all([
          a.create({ name: 'X', age: 1, city: 'c' }),
          a.create({ name: 'Y', age: 2, city: 'c' }),
        ]);
        assert.ok(x !== undefined && y !== undefined);
        for (let round = 0; round < 3; round++) {
          // Each store's writes of one tick share a transaction, so these lock x then y, and y then x.
          const results = await Promise.all([
            a.update(x.id, { city: `a${round}` }),
            a.update(y.id, { city: `a${round}` }),
            b.update(y.id, { city: `b${round}` }),
            b.update(x.id, { city: `b${round}` }),
          ]);
          assert.deepEqual(
            results.map((result) => result.ok),
            [true, true, true, true],
          );
        }
        const listed = await b.list({});
        assert.deepEqual(
          listed.map((user) => user.version),
          [7, 7],
        );
      } finally {
        await a.close();
        await b.close();
      }
    });

    it("another store's commits on the same database raise this one's version()", async () => {
      const url = await backend.fresh();
      const [a, b] = await Promise.all([openUrl(url), openUrl(url)]);
      try {
        const before = await a.version();
        await b.create({ name: 'Ada', age: 36, city: 'London' });
        assert.equal(await a.version(), before + 1);
      } finally {
        await a.close();
        await b.close();
      }
    });

    it('migrations 3 and 4 apply to a database without them and keep its records', async () => {
      const url = await backend.fresh();
      const store = await openUrl(url);
      const ada = await store.create({ name: 'Ada', age: 36, city: 'London' });
      await store.close();
      // Migration 8 changes the same table: a database without 3 and 4 has not had it either.
      const drop = 'DROP TABLE idempotency_keys; DELETE FROM schema_migrations WHERE version IN (3, 4, 8)';
      await runSql(url, { sqlite: drop, postgres: drop });
      assert.deepEqual(await migrationVersions(url), [1, 2, 5, 6, 7, 9, 10]);

      const upgraded = await openUrl(url);
      try {
        assert.deepEqual(await migrationVersions(url), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        assert.deepEqual(await upgraded.list({}), [ada]);
        const first = await upgraded.createOnce(ada, { key: 'k', fingerprint: 'f' });
        assert.ok(first.ok && !first.replayed);
        assert.deepEqual(await upgraded.createOnce(ada, { key: 'k', fingerprint: 'f' }), { ...first, replayed: true });
      } finally {
        await upgraded.close();
      }
    });

    it('migration 9 adds the index on city and age to a database at schema 8; stats read the same', async () => {
      const url = await backend.fresh();
      const store = await openUrl(url);
      await store.createMany([
        { name: 'Ada', age: 36, city: 'London' },
        { name: 'Bob', age: 20, city: 'London' },
        { name: 'Zoë', age: 7, city: 'Zürich' },
      ]);
      const before = await store.stats({}, 'city', 10);
      await store.close();
      const drop = 'DROP INDEX users_city_age; DELETE FROM schema_migrations WHERE version = 9';
      await runSql(url, { sqlite: drop, postgres: drop });
      assert.deepEqual(await migrationVersions(url), [1, 2, 3, 4, 5, 6, 7, 8, 10]);
      const upgraded = await openUrl(url);
      try {
        assert.deepEqual(await migrationVersions(url), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        const check = {
          // Fails (malformed JSON, division by zero) unless the index is there.
          sqlite: "SELECT json(iif(count(*) = 1, '1', 'none')) FROM sqlite_master WHERE name = 'users_city_age'",
          postgres:
            "SELECT 1 / count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'users_city_age'",
        };
        await runSql(url, check);
        assert.deepEqual(await upgraded.stats({}, 'city', 10), before);
        assert.deepEqual(before.groups[0], {
          value: 'London',
          count: 2,
          summaries: { age: { min: 20, max: 36, sum: 56 } },
        });
      } finally {
        await upgraded.close();
      }
    });

    it('migration 4 turns the values a key kept into the record id: its replay still works', async () => {
      const url = await backend.fresh();
      const store = await openUrl(url);
      const ada = await store.create({ name: 'Ada', age: 36, city: 'London' });
      await store.close();
      // The table as migration 3 left it, holding a key that kept the record's values.
      const snapshot = JSON.stringify(ada).replaceAll("'", "''");
      await runSql(url, {
        sqlite: `DROP TABLE idempotency_keys; DELETE FROM schema_migrations WHERE version IN (4, 8);
          CREATE TABLE idempotency_keys (key TEXT PRIMARY KEY NOT NULL, fingerprint TEXT NOT NULL,
            user_json TEXT NOT NULL, created_at INTEGER NOT NULL) STRICT;
          INSERT INTO idempotency_keys VALUES ('k', 'f', '${snapshot}', ${Date.now()})`,
        postgres: `DROP TABLE idempotency_keys; DELETE FROM schema_migrations WHERE version IN (4, 8);
          CREATE TABLE idempotency_keys (key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL,
            user_json TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now());
          INSERT INTO idempotency_keys (key, fingerprint, user_json) VALUES ('k', 'f', '${snapshot}')`,
      });
      const upgraded = await openUrl(url);
      try {
        assert.deepEqual(await migrationVersions(url), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        assert.deepEqual(await upgraded.createOnce(ada, { key: 'k', fingerprint: 'f' }), {
          ok: true,
          user: ada,
          replayed: true,
        });
        assert.deepEqual(await keyColumns(url), ['batch_ids', 'created_at', 'fingerprint', 'key', 'user_id']);
      } finally {
        await upgraded.close();
      }
    });

    it('migration 6 folds again the records an older fold left with ς or with ı as i', async () => {
      const url = await backend.fresh();
      const store = await openUrl(url);
      const samos = await store.create({ name: 'Σάμος', age: 30, city: 'Kırıkkale' });
      const other = await store.create({ name: 'Ada', age: 36, city: 'London' });
      await store.close();
      // The folded text as the fold before migration 6 made it, which searches missed.
      const old = "UPDATE users SET name_folded = 'σάμος', city_folded = 'kirikkale' WHERE name = 'Σάμος'";
      const forget = 'DELETE FROM schema_migrations WHERE version = 6';
      await runSql(url, { sqlite: `${old}; ${forget}`, postgres: `${old}; ${forget}` });
      const upgraded = await openUrl(url);
      try {
        assert.deepEqual(await migrationVersions(url), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        assert.deepEqual(await upgraded.list({ search: 'ΣΆΜΟΣ' }), [samos]);
        assert.deepEqual(await upgraded.list({ search: 'kırık' }), [samos]);
        assert.deepEqual(await upgraded.list({ search: 'kirik' }), []);
        assert.deepEqual(await upgraded.list({ search: 'london' }), [other]);
      } finally {
        await upgraded.close();
      }
    });

    it('a key older than 24 hours is forgotten: the same key stores a new record', async () => {
      const url = await backend.fresh();
      const store = await openUrl(url);
      try {
        const input = { name: 'Ada', age: 36, city: 'London' };
        const first = await store.createOnce(input, { key: 'k', fingerprint: 'f' });
        assert.ok(first.ok);
        await ageKeys(url, 23);
        assert.deepEqual(await store.createOnce(input, { key: 'k', fingerprint: 'f' }), { ...first, replayed: true });
        await ageKeys(url, 2);
        const again = await store.createOnce(input, { key: 'k', fingerprint: 'other' });
        assert.ok(again.ok && !again.replayed && again.user.id > first.user.id, JSON.stringify(again));
        assert.deepEqual(await store.createOnce(input, { key: 'k', fingerprint: 'other' }), {
          ...again,
          replayed: true,
        });
        assert.deepEqual(await keyCount(url), 1);
      } finally {
        await store.close();
      }
    });

    it('expired keys are deleted by the next keyed create of a newly opened store', async () => {
      const url = await backend.fresh();
      const first = await openUrl(url);
      for (const key of ['a', 'b', 'c'])
        await first.createOnce({ name: key, age: 1, city: 'c' }, { key, fingerprint: 'f' });
      await first.close();
      await ageKeys(url, 25);
      await runSql(url, {
        sqlite: "UPDATE idempotency_keys SET created_at = created_at + 7200000 WHERE key = 'c'",
        postgres: "UPDATE idempotency_keys SET created_at = created_at + interval '2 hours' WHERE key = 'c'",
      });
      assert.equal(await keyCount(url), 3);
      const store = await openUrl(url);
      try {
        await store.createOnce({ name: 'd', age: 1, city: 'c' }, { key: 'd', fingerprint: 'f' });
        assert.equal(await keyCount(url), 2, 'a and b (expired) are gone; c (not yet) and d stay');
      } finally {
        await store.close();
      }
    });

    it('no copy of a corrected or deleted record’s values stays in the database past the change log’s retention', async (t) => {
      if (backend.name !== 'sqlite') return t.skip('a file-level check: PostgreSQL keeps dead rows until VACUUM');
      const url = await backend.fresh();
      // The change log keeps each change (a deleted record as it was) for the retention: a second here.
      const store = await openUrl(url, 1000);
      const kept = await store.createOnce(
        { name: 'Zanzibar-Keyed', age: 36, city: 'Quixotic-Town' },
        { key: 'k', fingerprint: 'f' },
      );
      assert.ok(kept.ok);
      const corrected = await store.update(kept.user.id, { name: 'Corrected', city: 'Elsewhere' });
      assert.ok(corrected.ok);
      const gone = await store.create({ name: 'Vanishing-Person', age: 20, city: 'Xylophone-City' });
      assert.ok((await store.remove(gone.id)).ok);
      // Past the retention, the next write prunes the log.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await store.create({ name: 'After-Retention', age: 1, city: 'Later' });
      await store.close(); // the last connection folds the log into the file
      const bytes = readFileSync(url).toString('latin1');
      for (const value of ['Zanzibar-Keyed', 'Quixotic-Town', 'Vanishing-Person', 'Xylophone-City']) {
        assert.ok(!bytes.includes(value), `${value} is still in the file`);
      }
      assert.ok(bytes.includes('Corrected'), 'the check can see a stored value');
    });

    it('the change log keeps an update’s record as it was (committed and read back alike); creations, deletions and older rows keep none', async () => {
      const url = await backend.fresh();
      const store = await openUrl(url);
      try {
        const committed: Commit[] = [];
        store.onCommit((commit) => committed.push(commit));
        const created = await store.create({ name: 'Ada', age: 36, city: 'London' });
        await sleep(3);
        const updated = await store.update(created.id, { city: 'Paris' });
        assert.ok(updated.ok);
        assert.ok((await store.remove(created.id)).ok);
        const log = (await store.changes(0, 10)).changes;
        assert.deepEqual(
          log,
          committed.flatMap((commit) => commit.changes),
          'the log reads back what was committed',
        );
        const cases = [
          { kind: 'created', user: created, before: undefined },
          { kind: 'updated', user: updated.user, before: created },
          { kind: 'deleted', user: updated.user, before: undefined },
        ];
        for (const [i, expected] of cases.entries()) {
          const change = log[i];
          assert.equal(change?.kind, expected.kind);
          assert.deepEqual(change.user, expected.user, `${expected.kind}: the record`);
          assert.deepEqual(change.before, expected.before, `${expected.kind}: the record before`);
        }
      } finally {
        await store.close();
      }
      // An update logged before migration 10 has no before-state: it reads as none, not as a record.
      await runSql(url, {
        sqlite:
          'UPDATE changes SET before_name = NULL, before_age = NULL, before_city = NULL, before_updated_at = NULL',
        postgres:
          'UPDATE changes SET before_name = NULL, before_age = NULL, before_city = NULL, before_updated_at = NULL',
      });
      const reopened = await openUrl(url);
      try {
        const updated = (await reopened.changes(0, 10)).changes[1];
        assert.equal(updated?.kind, 'updated');
        assert.equal(updated.before, undefined);
        assert.equal(Object.hasOwn(updated, 'before'), false);
      } finally {
        await reopened.close();
      }
    });

    it('refuses a database whose schema is newer than this service knows', async () => {
      const url = await backend.fresh();
      await (await openUrl(url)).close();
      await addFutureMigration(url);
      await assert.rejects(openUrl(url), /newer.*999|999.*newer/);
    });
  });
}

/** The columns of idempotency_keys, sorted: a key must keep no value of its record. */
async function keyColumns(url: string): Promise<string[]> {
  if (!url.startsWith('postgres')) {
    const db = openBetterSqlite(url, { readonly: true });
    try {
      return (db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all('idempotency_keys') as string[]).sort();
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'idempotency_keys'
       AND table_schema = current_schema()`,
    );
    return rows.map((row) => row.column_name).sort();
  } finally {
    await client.end();
  }
}

/** The versions in schema_migrations, read with the database's own client. */
async function migrationVersions(url: string): Promise<number[]> {
  const query = 'SELECT version FROM schema_migrations ORDER BY version';
  if (!url.startsWith('postgres')) {
    const db = openBetterSqlite(url, { readonly: true });
    try {
      return (db.prepare(query).pluck().all() as number[]).map(Number);
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ version: number }>(query)).rows.map((row) => row.version);
  } finally {
    await client.end();
  }
}

async function addFutureMigration(url: string): Promise<void> {
  if (!url.startsWith('postgres')) {
    const db = openBetterSqlite(url);
    db.prepare("INSERT INTO schema_migrations VALUES (999, 'future', 'x')").run();
    db.close();
    return;
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query("INSERT INTO schema_migrations (version, name) VALUES (999, 'future')");
  await client.end();
}

/**
 * Runs SQL on the database a URL names with its own client, outside any store. An SQLite store
 * reads one snapshot per turn of the event loop, so this returns in the next turn, as a change by
 * another process would arrive.
 */
async function runSql(url: string, sql: { sqlite: string; postgres: string }): Promise<void> {
  if (!url.startsWith('postgres')) {
    const db = openBetterSqlite(url);
    try {
      db.exec(sql.sqlite);
    } finally {
      db.close();
    }
    await new Promise((resolve) => setImmediate(resolve));
    return;
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql.postgres);
  } finally {
    await client.end();
  }
}

/** Makes every remembered Idempotency-Key `hours` older, as if that time had passed. */
function ageKeys(url: string, hours: number): Promise<void> {
  return runSql(url, {
    sqlite: `UPDATE idempotency_keys SET created_at = created_at - ${hours * 3_600_000}`,
    postgres: `UPDATE idempotency_keys SET created_at = created_at - interval '${hours} hours'`,
  });
}

/** How many Idempotency-Key rows the database holds, expired or not. */
async function keyCount(url: string): Promise<number> {
  const query = 'SELECT count(*) AS n FROM idempotency_keys';
  if (!url.startsWith('postgres')) {
    const db = openBetterSqlite(url, { readonly: true });
    try {
      return Number((db.prepare(query).get() as { n: number }).n);
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return Number((await client.query<{ n: string }>(query)).rows[0]?.n);
  } finally {
    await client.end();
  }
}
