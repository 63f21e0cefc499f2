import { parseDatabaseUrl } from '../../src/config/load.ts';
import { openDatabase } from '../../src/store/database.ts';

/**
 * Stores `count` records as `user-records import` does (the store's bulk side: one transaction, ids
 * in order), far faster than over HTTP or one create at a time: `<prefix>bulk<i>`, living in
 * `<prefix>Bulkcity`. For a table big enough that listing it takes a while; the database must be
 * empty, and the server must not be running on SQLite meanwhile.
 */
export async function seedRecords(url: string, count: number, prefix: string): Promise<void> {
  const database = parseDatabaseUrl(url);
  if (typeof database === 'string') throw new Error(database);
  const bulk = await openDatabase({ database, databaseTimeoutMs: 30_000, databasePoolSize: 4 }).openBulk();
  try {
    const importer = await bulk.importer();
    try {
      for (let first = 0; first < count; first += 1000) {
        const batch = Array.from({ length: Math.min(1000, count - first) }, (_, i) => first + i);
        await importer.add(batch.map((i) => ({ name: `${prefix}bulk${i}`, age: i % 151, city: `${prefix}Bulkcity` })));
      }
      await importer.commit();
    } catch (error) {
      await importer.abort();
      throw error;
    }
  } finally {
    await bulk.close();
  }
}
