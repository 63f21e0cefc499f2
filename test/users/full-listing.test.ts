import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { Readable } from 'node:stream';
import { parseDatabaseUrl } from '../../src/config/load.ts';
import { openDatabase } from '../../src/store/database.ts';
import type { UserStore } from '../../src/store/store.ts';
import { FullListing, type Listing } from '../../src/users/full-listing.ts';
import { BACKENDS, type Database } from '../helpers/backends.ts';

async function openUrl(url: string): Promise<UserStore> {
  const database = parseDatabaseUrl(url);
  if (typeof database === 'string') throw new Error(database);
  return openDatabase({ database, databaseTimeoutMs: 5000, databasePoolSize: 5 }).openStore();
}

/** The body as text, and whether it came from memory (a Buffer) rather than streamed. */
async function read(listing: Listing): Promise<{ text: string; cached: boolean }> {
  if (Buffer.isBuffer(listing.body)) return { text: listing.body.toString(), cached: true };
  const chunks: Buffer[] = [];
  for await (const chunk of listing.body as Readable) chunks.push(Buffer.from(chunk as string));
  return { text: Buffer.concat(chunks).toString(), cached: false };
}

/** The listing as the general list path would serialize it. */
async function expected(store: UserStore): Promise<string> {
  const users = await store.list({});
  return JSON.stringify({ data: users.map((user) => ({ name: user.name, age: String(user.age), city: user.city })) });
}

const databases: Database[] = [];
after(async () => {
  for (const database of databases) await database.drop();
});

for (const backend of BACKENDS) {
  describe(`full listing cache [${backend.name}]`, { skip: backend.skip }, () => {
    const fresh = async () => {
      const database = await backend.fresh();
      databases.push(database);
      return database.url;
    };

    it('streams first, then serves from memory, kept current by its own writes', async () => {
      const store = await openUrl(await fresh());
      try {
        const listing = new FullListing(store, 64 * 1024 * 1024);
        const empty = await read(await listing.get());
        assert.deepEqual(empty, { text: '{"data":[]}', cached: false });
        assert.deepEqual(await read(await listing.get()), { text: '{"data":[]}', cached: true });
        const ada = await store.create({ name: 'Ada "A" \\ Løvelace 😀', age: 36, city: 'Lon\ndon' });
        const ben = await store.create({ name: 'Ben', age: 41, city: 'Leeds' });
        await store.create({ name: 'Cy', age: 5, city: 'York' });
        await store.update(ada.id, { city: 'Paris' });
        await store.remove(ben.id);
        const current = await listing.get();
        assert.equal(current.version, await store.version());
        assert.equal(current.history, (await store.position()).history);
        assert.equal(current.count, 2, 'the kept copy counts its own records');
        assert.deepEqual(await read(current), { text: await expected(store), cached: true });
      } finally {
        await store.close();
      }
    });

    it('a write by another process is seen at once: the listing streams again', async () => {
      const url = await fresh();
      const [mine, theirs] = await Promise.all([openUrl(url), openUrl(url)]);
      try {
        const listing = new FullListing(mine, 64 * 1024 * 1024);
        await mine.create({ name: 'Ada', age: 36, city: 'London' });
        await read(await listing.get());
        assert.equal((await read(await listing.get())).cached, true);
        await theirs.create({ name: 'Ben', age: 41, city: 'Leeds' });
        const after = await read(await listing.get());
        assert.deepEqual(after, { text: await expected(mine), cached: false });
        await mine.create({ name: 'Cy', age: 5, city: 'York' });
        assert.deepEqual(await read(await listing.get()), { text: await expected(mine), cached: true });
      } finally {
        await mine.close();
        await theirs.close();
      }
    });

    it('requests that come while the copy is being built wait for it instead of reading the table again', async () => {
      const store = await openUrl(await fresh());
      try {
        await Promise.all(Array.from({ length: 2500 }, (_, i) => store.create({ name: `n${i}`, age: 1, city: 'c' })));
        const listing = new FullListing(store, 64 * 1024 * 1024);
        const building = read(await listing.get());
        await new Promise((resolve) => setImmediate(resolve));
        const [first, ...others] = await Promise.all([building, read(await listing.get()), read(await listing.get())]);
        assert.equal(first?.cached, false);
        for (const other of others) assert.deepEqual(other, { text: first?.text, cached: true });
      } finally {
        await store.close();
      }
    });

    it('a listing larger than its memory budget is not kept, and streams every time', async () => {
      const store = await openUrl(await fresh());
      try {
        await Promise.all(
          Array.from({ length: 3000 }, (_, i) => store.create({ name: `name-${i}`, age: i % 151, city: 'c' })),
        );
        const listing = new FullListing(store, 50_000);
        for (let i = 0; i < 3; i++) {
          assert.deepEqual(await read(await listing.get()), { text: await expected(store), cached: false });
        }
        const none = new FullListing(store, 0);
        await read(await none.get());
        assert.equal((await read(await none.get())).cached, false);
      } finally {
        await store.close();
      }
    });

    it('streams listings longer than one page as one valid body', async () => {
      const store = await openUrl(await fresh());
      try {
        const inputs = Array.from({ length: 12_345 }, (_, i) => ({ name: `n${i}`, age: i % 151, city: `c${i % 13}` }));
        for (let i = 0; i < inputs.length; i += 1000) {
          await Promise.all(inputs.slice(i, i + 1000).map((input) => store.create(input)));
        }
        const listing = new FullListing(store, 64 * 1024 * 1024);
        const streamed = await read(await listing.get());
        assert.equal(streamed.cached, false);
        assert.equal(streamed.text, await expected(store));
        assert.equal(JSON.parse(streamed.text).data.length, inputs.length);
        assert.deepEqual(await read(await listing.get()), { text: streamed.text, cached: true });

        // Changes inside kept chunks, at their edges, and appends across a chunk boundary.
        const users = await store.list({});
        const pick = (i: number) => (users[i] as { id: number }).id;
        await Promise.all([
          store.update(pick(0), { name: 'first, changed' }),
          store.update(pick(999), { city: 'edge of the first chunk' }),
          store.remove(pick(1000)),
          store.update(pick(5555), { name: 'Ünïcødé ✓', age: 150 }),
          store.remove(pick(12_344)),
        ]);
        for (let i = 0; i < 1200; i += 300) {
          await Promise.all(inputs.slice(i, i + 300).map((input) => store.create(input)));
        }
        await store.remove(pick(1));
        const changed = await read(await listing.get());
        assert.equal(changed.cached, true);
        assert.equal(changed.text, await expected(store));
      } finally {
        await store.close();
      }
    });
  });
}
