import type { Pool } from 'pg';
import { type Migration, pendingMigrations } from '../migrations.ts';

/**
 * PostgreSQL's schema, in the SQL that PostgreSQL-compatible distributed engines also accept:
 * an identity column, plain types and CHECK constraints, no extensions, triggers or functions.
 */
const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'create users',
    sql: `
      CREATE TABLE users (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        name TEXT NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
        age SMALLINT NOT NULL CHECK (age BETWEEN 0 AND 150),
        city TEXT NOT NULL CHECK (char_length(city) BETWEEN 1 AND 200),
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        version INTEGER NOT NULL DEFAULT 1
      );
      CREATE INDEX users_name ON users (name);
      CREATE INDEX users_city ON users (city);
      CREATE INDEX users_age ON users (age);
    `,
  },
  {
    version: 2,
    name: 'create store_version',
    // One row counting committed write transactions: caches and ETags compare it across processes.
    sql: `
      CREATE TABLE store_version (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        version BIGINT NOT NULL
      );
      INSERT INTO store_version (id, version) VALUES (1, 0);
    `,
  },
  {
    version: 3,
    name: 'create idempotency_keys',
    // The Idempotency-Keys of POST /users: a hash of the input, never the input, and the record as
    // first created. The primary key makes a second row for a key an error, never a duplicate.
    sql: `
      CREATE TABLE idempotency_keys (
        key TEXT PRIMARY KEY CHECK (char_length(key) BETWEEN 1 AND 255),
        fingerprint TEXT NOT NULL,
        user_json TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
      );
      CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
    `,
  },
  {
    version: 4,
    name: 'idempotency_keys keep the record id, not its values',
    // A key remembered the created record's name, age and city, which then outlived a deletion or a
    // correction. It keeps the id now; a replay reads the record as it is.
    sql: `
      ALTER TABLE idempotency_keys ADD COLUMN user_id BIGINT NOT NULL DEFAULT 0;
      UPDATE idempotency_keys SET user_id = CAST(CAST(user_json AS JSON) ->> 'id' AS BIGINT);
      ALTER TABLE idempotency_keys DROP COLUMN user_json;
    `,
  },
];

/** Any fixed number works; it only has to be the same in every instance of the service. */
const MIGRATION_LOCK = 7_153_294_021;

/**
 * Brings the schema up to date in one transaction that holds an advisory lock, so instances that
 * start at the same moment apply each migration exactly once and the others wait, then see it done.
 */
export async function migratePostgres(pool: Pool): Promise<void> {
  const client = await pool.connect();
  // A connection that breaks mid-migration fails the query in flight; without a listener its
  // 'error' event would end the process instead of the start-up reporting why.
  const ignore = () => undefined;
  client.on('error', ignore);
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )`);
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
    for (const migration of pendingMigrations(MIGRATIONS, new Set(rows.map((row) => row.version)))) {
      await client.query(migration.sql);
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ]);
    }
    await client.query('COMMIT');
    client.off('error', ignore);
    client.release();
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    client.off('error', ignore);
    client.release(true);
    throw error;
  }
}
