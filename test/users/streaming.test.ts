import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openSqliteStore } from '../../src/store/sqlite/store.ts';
import type { UserStore } from '../../src/store/store.ts';
import { PAGE_SIZE, pages } from '../../src/users/listing.ts';

// Listings without `limit` stream a page at a time. SQLite reads are synchronous, so the pages of
// many listings at once must not run back to back: one page per turn of the event loop, whatever
// the number of listings, or other requests wait for a page of every listing (and the overload
// check sheds them).
describe('streamed listings take turns with the rest of the event loop', () => {
  let store: UserStore;
  const RECORDS = PAGE_SIZE * 2 + 10;

  before(async () => {
    store = await openSqliteStore(':memory:');
    const creates: Array<Promise<unknown>> = [];
    for (let i = 0; i < RECORDS; i++) creates.push(store.create({ name: `n${i}`, age: i % 151, city: `c${i % 7}` }));
    await Promise.all(creates);
  });
  after(async () => store?.close());

  it('five listings at once read at most one page per turn, and each reads every record', async () => {
    // A turn of the event loop is counted by a chain of setImmediate, one link per turn.
    let turn = 0;
    let counting = true;
    const count = () => {
      turn += 1;
      if (counting) setImmediate(count);
    };
    setImmediate(count);
    const turnsOfPages: number[] = [];
    const listing = async (sorted: boolean) => {
      let records = 0;
      const order = sorted ? { sort: [{ field: 'name' as const, descending: true }] } : undefined;
      for await (const page of pages(store, {}, order)) {
        turnsOfPages.push(turn);
        records += page.length;
      }
      return records;
    };
    const counts = await Promise.all([listing(false), listing(true), listing(false), listing(true), listing(false)]);
    counting = false;
    assert.deepEqual(counts, [RECORDS, RECORDS, RECORDS, RECORDS, RECORDS]);
    // The first page of each listing is read at once; every later page on a turn of its own.
    const later = turnsOfPages.slice(5);
    assert.equal(later.length, 10);
    assert.equal(new Set(later).size, later.length, `pages read on the same turn: ${turnsOfPages.join(', ')}`);
  });
});
