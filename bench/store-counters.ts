import Database from 'better-sqlite3';
import pg from 'pg';

/** The records stored, read beside the running service. */
export interface StoreCounters {
  records: number;
}

/** Reads the counters from an SQLite file or a postgres:// URL; undefined when it cannot (no users table yet). */
export async function storeCounters(location: string): Promise<StoreCounters | undefined> {
  const sql = 'SELECT count(*) AS records FROM users';
  try {
    if (!location.startsWith('postgres')) {
      const db = new Database(location, { readonly: true });
      try {
        const row = db.prepare(sql).get() as { records: number };
        return { records: Number(row.records) };
      } finally {
        db.close();
      }
    }
    const client = new pg.Client({ connectionString: location });
    await client.connect();
    try {
      const { rows } = await client.query<{ records: string }>(sql);
      return { records: Number(rows[0]?.records) };
    } finally {
      await client.end();
    }
  } catch {
    return undefined;
  }
}
