import Database from 'better-sqlite3';
import pg from 'pg';

/** Committed write transactions (the service's store_version) and stored records, read beside the running service. */
export interface StoreCounters {
  commits: number;
  records: number;
}

/** Reads the counters from an SQLite file or a postgres:// URL; undefined when the schema has no store_version. */
export async function storeCounters(location: string): Promise<StoreCounters | undefined> {
  const sql = 'SELECT (SELECT version FROM store_version) AS commits, (SELECT count(*) FROM users) AS records';
  try {
    if (!location.startsWith('postgres')) {
      const db = new Database(location, { readonly: true });
      try {
        const row = db.prepare(sql).get() as { commits: number; records: number };
        return { commits: Number(row.commits), records: Number(row.records) };
      } finally {
        db.close();
      }
    }
    const client = new pg.Client({ connectionString: location });
    await client.connect();
    try {
      const { rows } = await client.query<{ commits: string; records: string }>(sql);
      return { commits: Number(rows[0]?.commits), records: Number(rows[0]?.records) };
    } finally {
      await client.end();
    }
  } catch {
    return undefined;
  }
}
