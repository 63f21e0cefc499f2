import pg from 'pg';
import { openPostgresStore } from '../src/store/postgres/store.ts';
import { findPostgresBin, type PostgresCluster, startPostgresCluster } from '../test/helpers/pg-cluster.ts';
import { findProcess, withChildren } from './proc-stats.ts';
import { fold } from '../src/store/store.ts';
import { seedBatches } from './seed-data.ts';

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
 * Replaces every record with `count` seeded ones (seed-data.ts), sent in batches; record i was
 * created i ms after record 1, as in the SQLite seeding. The folded columns are the service's own
 * fold(), as for every write it makes.
 */
export async function seedPostgres(url: string, count: number): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('TRUNCATE users RESTART IDENTITY');
    await client.query('BEGIN');
    for (const { first, records } of seedBatches(count)) {
      await client.query(
        `INSERT INTO users (name, age, city, name_folded, city_folded, created_at, updated_at)
         SELECT name, age, city, name_folded, city_folded, at, at
         FROM (
           SELECT seeded.*, date_trunc('milliseconds', now()) - ($1::int - i) * interval '1 millisecond' AS at
           FROM unnest($2::int[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[])
             AS seeded (i, name, age, city, name_folded, city_folded)
         ) AS timed
         ORDER BY i`,
        [
          count,
          records.map((_, k) => first + k),
          records.map((record) => record.name),
          records.map((record) => Number(record.age)),
          records.map((record) => record.city),
          records.map((record) => fold(record.name)),
          records.map((record) => fold(record.city)),
        ],
      );
    }
    await client.query('COMMIT');
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
