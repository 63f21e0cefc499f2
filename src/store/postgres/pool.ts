import pg, { type Pool, type PoolConfig } from 'pg';
import { guarded } from './errors.ts';
import { migratePostgres } from './migrations.ts';

/**
 * A pool of connections to the database at `url`, the schema brought up to date first (as SQLite's
 * connection.ts opens one connection). A pooled idle connection that breaks (the server restarted)
 * is dropped by the pool, and the next query that needs the database reports the fault: without a
 * listener it would crash the process.
 */
export async function openPool(url: string, config: Omit<PoolConfig, 'connectionString'>): Promise<Pool> {
  const pool = new pg.Pool({ connectionString: url, ...config });
  pool.on('error', () => undefined);
  try {
    await guarded(() => migratePostgres(pool));
    return pool;
  } catch (error) {
    await pool.end();
    throw error;
  }
}
