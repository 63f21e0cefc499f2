import pg from 'pg';
import { openPostgresStore } from '../src/store/postgres/postgres-store.ts';
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
 * Replaces every record with `count` seeded ones, generated inside PostgreSQL; created_at and
 * updated_at keep their defaults.
 */
export async function seedPostgres(url: string, count: number): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('TRUNCATE users RESTART IDENTITY');
    // Same records as seedRecord(i): CITIES[i % n] is the 1-based array element 1 + i % n.
    await client.query(
      `INSERT INTO users (name, age, city)
       SELECT 'user' || i, i % 151, ($2::text[])[1 + i % cardinality($2::text[])]
       FROM generate_series(1, $1::int) AS i`,
      [count, [...CITIES]],
    );
    // Count the seeding as one write transaction, as the service does for its own.
    await client.query('UPDATE store_version SET version = version + 1');
    await client.query('ANALYZE users');
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
