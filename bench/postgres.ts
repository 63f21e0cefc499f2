import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { findProcess, withChildren } from './proc-stats.ts';
import { CITIES } from './seed-data.ts';

export interface PostgresCluster {
  url: string;
  stop(): Promise<void>;
}

type StartCluster = () => Promise<unknown>;

/** The project's test helper for a throwaway cluster, when it exists; otherwise the reason it cannot be used. */
export async function startPostgres(root: string): Promise<PostgresCluster | string> {
  const file = join(root, 'test/helpers/pg-cluster.ts');
  if (!existsSync(file)) return 'test/helpers/pg-cluster.ts does not exist yet';
  const module: unknown = await import(pathToFileURL(file).href);
  if (typeof module !== 'object' || module === null || !('startPostgresCluster' in module)) {
    return 'test/helpers/pg-cluster.ts does not export startPostgresCluster';
  }
  const start = module.startPostgresCluster;
  if (typeof start !== 'function') return 'startPostgresCluster is not a function';
  let cluster: unknown;
  try {
    cluster = await (start as StartCluster)();
  } catch (error) {
    return `startPostgresCluster() failed: ${(error as Error).message}`;
  }
  if (
    typeof cluster !== 'object' ||
    cluster === null ||
    !('url' in cluster) ||
    typeof cluster.url !== 'string' ||
    !('stop' in cluster) ||
    typeof cluster.stop !== 'function'
  ) {
    return 'startPostgresCluster() did not answer { url, stop }';
  }
  const stop = cluster.stop as () => Promise<void>;
  return { url: cluster.url, stop: () => stop.call(cluster) };
}

/**
 * Replaces every record with `count` seeded ones, generated inside PostgreSQL. Run it after the service
 * has started once on this database, since the service owns the schema; created_at and updated_at keep
 * their defaults.
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
    // Count the seeding as one write transaction, as the service does for its own (when it keeps that count).
    const { rows } = await client.query<{ counted: boolean }>(
      "SELECT to_regclass('store_version') IS NOT NULL AS counted",
    );
    if (rows[0]?.counted === true) await client.query('UPDATE store_version SET version = version + 1');
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
