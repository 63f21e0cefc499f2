import { copyFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { openSqliteStore } from '../src/store/sqlite/store.ts';
import { fold } from '../src/store/store.ts';
import { seedCities } from './seed-data.ts';
import { seedSqlite } from './seed-files.ts';

// Why a create on SQLite costs more at 1M records than at 1k (target T7): the pages each create
// writes to the WAL, and the CPU of a create through the service's store, with every index and
// without the three whose insert points spread out as the table grows (age, city, city with age).
// node --import tsx bench/write-pages.ts [--records 1000000] [--creates 4000] [--rounds 3]
const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    creates: { type: 'string', default: '4000' },
    rounds: { type: 'string', default: '3' },
  },
});
const large = Number(values.records);
const creates = Math.min(50_000, Math.max(800, Number(values.creates)));
const rounds = Math.min(9, Math.max(1, Number(values.rounds)));
const SIZES = [1_000, large];
const SPREAD_INDEXES = 'DROP INDEX users_age; DROP INDEX users_city; DROP INDEX users_city_age;';
const VARIANTS = [
  { name: 'every index', sql: '' },
  { name: 'without age, city, city+age', sql: SPREAD_INDEXES },
];
/** Creates as the bench's workload sends them: new names, an age and one of 16 seeded cities. */
const cities = seedCities().slice(0, 16);
const record = (k: number) => ({ name: `bench${k}`, age: 18 + (k % 73), city: cities[k % cities.length] as string });

const dir = mkdtempSync(join(tmpdir(), 'user-records-write-pages-'));
process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
const seeded = (count: number) => join(dir, `seed-${count}.db`);
for (const count of SIZES) {
  const began = Date.now();
  await seedSqlite(seeded(count), count);
  console.log(`seeded ${count.toLocaleString('en')} records in ${((Date.now() - began) / 1000).toFixed(0)} s`);
}

/** A copy of the seeded file with the variant's indexes dropped. */
function copyOf(count: number, sql: string): string {
  const path = join(dir, 'run.db');
  for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
  copyFileSync(seeded(count), path);
  if (sql !== '') {
    const db = new Database(path);
    db.exec(sql);
    db.close();
  }
  return path;
}

/**
 * WAL pages per create: the users insert the service makes (its triggers fill the search index),
 * 8 to a transaction as group commit makes them at 10 connections, with automatic checkpoints
 * off so the WAL's length counts every page written. The change log and store_version rows a
 * create also writes are appended or rewritten in place, the same at any size.
 */
function walPages(count: number, sql: string): number {
  const path = copyOf(count, sql);
  const db = new Database(path);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('wal_autocheckpoint = 0');
    db.pragma('cache_size = -32768');
    db.pragma('wal_checkpoint(TRUNCATE)');
    const insert = db.prepare(
      'INSERT INTO users (name, age, city, name_folded, city_folded, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    let k = 0;
    const batch = db.transaction(() => {
      for (let i = 0; i < 8; i++, k++) {
        const { name, age, city } = record(k);
        insert.run(name, age, city, fold(name), fold(city), Date.now(), Date.now());
      }
    });
    for (let b = 0; b < creates / 8; b++) batch();
    return statSync(`${path}-wal`).size / (db.pragma('page_size', { simple: true }) as number) / creates;
  } finally {
    db.close();
  }
}

/** CPU µs per create through the service's SQLite store (its writer thread), 10 at a time. */
async function storeCpu(count: number, sql: string): Promise<number> {
  const store = await openSqliteStore(copyOf(count, sql));
  let k = 0;
  const writers = (each: number) =>
    Promise.all(
      Array.from({ length: 10 }, async () => {
        for (let i = 0; i < each; i++) await store.create(record(k++));
      }),
    );
  try {
    await writers(50); // warm: statements prepared, the hot pages cached
    const before = process.cpuUsage();
    await writers(creates / 10);
    const used = process.cpuUsage(before);
    return (used.user + used.system) / creates;
  } finally {
    await store.close();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
console.log(`\n${creates.toLocaleString('en')} creates per measure; CPU medians of ${rounds} alternating rounds`);
console.log('records     indexes                        WAL pages/create  CPU µs/create (all rounds)');
const cpu = new Map<string, number[]>();
for (let round = 0; round < rounds; round++) {
  for (const variant of VARIANTS) {
    for (const count of SIZES) {
      const key = `${count} ${variant.name}`;
      cpu.set(key, [...(cpu.get(key) ?? []), await storeCpu(count, variant.sql)]);
    }
  }
}
for (const variant of VARIANTS) {
  for (const count of SIZES) {
    const all = cpu.get(`${count} ${variant.name}`) ?? [];
    console.log(
      `${count.toLocaleString('en').padEnd(11)} ${variant.name.padEnd(30)} ${walPages(count, variant.sql).toFixed(2).padStart(16)}  ${median(all).toFixed(0).padStart(13)} (${all.map((x) => x.toFixed(0)).join(' ')})`,
    );
  }
}
