import { writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { openSqliteStore } from '../src/store/sqlite/store.ts';
import { fold } from '../src/store/store.ts';
import { seedRecord } from './seed-data.ts';

/**
 * An SQLite file with the service's schema and `count` records, inserted in one transaction; record
 * i was created i ms after record 1, so sorting by time has distinct values to order.
 */
export async function seedSqlite(path: string, count: number): Promise<void> {
  // The service's own code creates the schema, so the bench cannot drift from its migrations.
  await (await openSqliteStore(path)).close();
  const db = new Database(path);
  try {
    const insert = db.prepare(
      'INSERT INTO users (name, age, city, name_folded, city_folded, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    const start = Date.now() - count;
    db.transaction(() => {
      for (let i = 1; i <= count; i++) {
        const record = seedRecord(i);
        insert.run(
          record.name,
          Number(record.age),
          record.city,
          fold(record.name),
          fold(record.city),
          start + i,
          start + i,
        );
      }
      // Count the seeding as one write transaction, as the service does for its own (when it keeps that count).
      const counted = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'store_version'").get();
      if (counted !== undefined) db.exec('UPDATE store_version SET version = version + 1');
    })();
  } finally {
    db.close();
  }
}

/** json-server's db.json with the same records under `users`, ids 1..count. */
export function seedJsonServer(path: string, count: number): void {
  const users = Array.from({ length: count }, (_, i) => ({ id: i + 1, ...seedRecord(i + 1) }));
  writeFileSync(path, JSON.stringify({ users }));
}
