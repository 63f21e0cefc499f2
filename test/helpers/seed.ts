import { parseDatabaseUrl } from '../../src/config/load.ts';
import { openDatabase } from '../../src/store/database.ts';

/**
 * Stores `count` records straight through the service's own store (its schema, its group commit),
 * much faster than over HTTP: `<prefix>bulk<i>`, living in `<prefix>Bulkcity`. For a table big
 * enough that listing it takes a while; the server must not be running on SQLite meanwhile.
 */
export async function seedRecords(url: string, count: number, prefix: string): Promise<void> {
  const database = parseDatabaseUrl(url);
  if (typeof database === 'string') throw new Error(database);
  const store = await openDatabase({ database, databaseTimeoutMs: 30_000, databasePoolSize: 4 }).openStore();
  try {
    for (let first = 0; first < count; first += 1000) {
      const batch = Array.from({ length: Math.min(1000, count - first) }, (_, i) => first + i);
      await Promise.all(
        batch.map((i) => store.create({ name: `${prefix}bulk${i}`, age: i % 151, city: `${prefix}Bulkcity` })),
      );
    }
  } finally {
    await store.close();
  }
}
