// Run by native-objects.test.ts in a process of its own: makes many better-sqlite3 objects the way
// the service does (connections opened and closed, listings of many shapes on the event loop of a
// `:memory:` store and on the reader threads of a file's), with pauses in which V8 may collect
// garbage from a task of its own, then ends. Prints one JSON line of what it saw.
import '../helpers/built-threads.ts';
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { openConnection } from '../../src/store/sqlite/connection.ts';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/store.ts';
import type { ListFilter, ListOrder } from '../../src/store/store.ts';

const [folder, opens, rounds] = [process.argv[2] as string, Number(process.argv[3]), Number(process.argv[4])];

/** The i-th listing: a different SQL text for each i (one more range each time, two orders). */
const listing = (i: number): [ListFilter, ListOrder] => [
  { ranges: Array.from({ length: 1 + (i >> 1) }, () => ({ field: 'age', op: 'gte', value: 0 }) as const), limit: 5 },
  { sort: [{ field: 'age', descending: i % 2 === 1 }] },
];

async function listMany(store: SqliteStore): Promise<number> {
  let seen = 0;
  for (let i = 0; i < rounds; i++) {
    const [filter, order] = listing(i);
    seen += (await store.list(filter, order)).length;
    if (i % 50 === 0) await pause(20);
  }
  return seen;
}

async function fill(store: SqliteStore): Promise<void> {
  for (const [name, age] of [
    ['Ada', 36],
    ['Bo', 7],
    ['Cy', 90],
  ] as const)
    await store.create({ name, age, city: 'X' });
}

// Connections opened and closed in a row (a writer reopening, the commands): on Node 24 this alone
// aborted every time while their objects were let go.
const path = join(folder, 'users.db');
for (let i = 0; i < opens; i++) openConnection(path, { busyTimeoutMs: 1000, migrate: i === 0 }).close();

// More listing shapes than a reader thread keeps (it is then replaced), and as many on the event
// loop of a `:memory:` store.
// A generous wait: a replaced reader thread starts slowly on a busy machine.
const file = await openSqliteStore(path, { readers: 1, busyTimeoutMs: 60_000 });
await fill(file);
const onReaders = await listMany(file);
await file.close();

const memory = await openSqliteStore(':memory:');
await fill(memory);
const inMemory = await listMany(memory);
await memory.close();

console.log(JSON.stringify({ inMemory, onReaders }));
