import pg from 'pg';
import { openPostgresStore } from '../src/store/postgres/store.ts';
import { findPostgresBin, type PostgresCluster, startPostgresCluster } from '../test/helpers/pg-cluster.ts';
import { findProcess, withChildren } from './proc-stats.ts';
import { CITIES } from './seed-data.ts';

export type { PostgresCluster };

/**
 * A throwaway cluster (the tests' helper) with the service's schema in place, or the reason there is
 * none.
 */
export async function startPostgres(): Promise<PostgresCluster | string> {
  if (findPostgresBin() === undefined) return 'no PostgreSQL binaries (install postgresql, or set PG_BIN)';
  let cluster: PostgresCluster;
  try {
    cluster = await startPostgresCluster();
  } catch (error) {
    return `the PostgreSQL cluster did not start: ${(error as Error).message}`;
  }
  await (await openPostgresStore(cluster.url, { poolSize: 1, statementTimeoutMs: 30_000 })).close();
  return cluster;
}

/**
 * Replaces every record with `count` seeded ones, generated inside PostgreSQL; record i was created
 * i ms after record 1, as in the SQLite seeding. The seeded text is ASCII, so lower() folds it as
 * the service does.
 */
export async function seedPostgres(url: string, count: number): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('TRUNCATE users RESTART IDENTITY');
    // Same records as seedRecord(i): CITIES[i % n] is the 1-based array element 1 + i % n.
    await client.query(
      `INSERT INTO users (name, age, city, name_folded, city_folded, created_at, updated_at)
       SELECT name, age, city, lower(name), lower(city), at, at
       FROM (
         SELECT 'user' || i AS name, i % 151 AS age, ($2::text[])[1 + i % cardinality($2::text[])] AS city,
           date_trunc('milliseconds', now()) - ($1::int - i) * interval '1 millisecond' AS at
         FROM generate_series(1, $1::int) AS i
       ) AS seeded`,
      [count, [...CITIES]],
    );
    // Count the seeding as one write transaction, as the service does for its own.
    await client.query('UPDATE store_version SET version = version + 1');
    // As autovacuum would after a bulk load: statistics, and a visibility map for index-only scans.
    await client.query('VACUUM ANALYZE users');
  } finally {
    await client.end();
  }
}

/** The PIDs doing PostgreSQL's work for the URL's port (postmaster and backends), so its CPU is not counted as noise. */
export function postgresPids(url: string): () => number[] {
  const port = new URL(url).port;
  let postmaster: number | undefined;
  return () => {
    postmaster ??= findProcess((argv) => (argv[0] ?? '').endsWith('postgres') && argv.join(' ').includes(`-p ${port}`));
    return postmaster === undefined ? [] : withChildren(postmaster);
  };
}
