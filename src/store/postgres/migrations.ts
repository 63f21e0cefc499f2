import type { Pool, PoolClient } from 'pg';
import { type Migration, pendingMigrations } from '../migrations.ts';
import { fold } from '../store.ts';

/** A PostgreSQL migration may also fill in what SQL alone cannot compute, in its transaction. */
/** A migration whose data is rewritten by code (`backfill`), then finished by `after` (indexes over the new data). */
type PostgresMigration = Migration & { backfill?: (client: PoolClient) => Promise<void>; after?: string };

/**
 * PostgreSQL's schema, in the SQL that PostgreSQL-compatible distributed engines also accept: an
 * identity column, plain types and CHECK constraints, no triggers or functions of ours. The one
 * extension, pg_trgm (for search), is used only where it can be made; without it search scans.
 */
/** Sets the folded name and city of these records by the service's own fold(). */
async function refold(
  client: PoolClient,
  rows: ReadonlyArray<{ id: string; name: string; city: string }>,
): Promise<void> {
  if (rows.length === 0) return;
  await client.query(
    `UPDATE users SET name_folded = f.name_folded, city_folded = f.city_folded
     FROM unnest($1::bigint[], $2::text[], $3::text[]) AS f(id, name_folded, city_folded)
     WHERE users.id = f.id`,
    [rows.map((row) => row.id), rows.map((row) => fold(row.name)), rows.map((row) => fold(row.city))],
  );
}

const MIGRATIONS: readonly PostgresMigration[] = [
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
  {
    version: 5,
    name: 'queries: folded text, sort indexes, trigram search',
    // Times to the millisecond the API shows (a page's cursor compares them exactly); every sort
    // field indexed with the id after it, text by code point (COLLATE "C"); search compares folded
    // text (store.ts `fold`, filled in below), indexed by pg_trgm where the extension may be made.
    sql: `
      ALTER TABLE users ADD COLUMN name_folded TEXT NOT NULL DEFAULT '',
        ADD COLUMN city_folded TEXT NOT NULL DEFAULT '';
      UPDATE users SET created_at = date_trunc('milliseconds', created_at),
        updated_at = date_trunc('milliseconds', updated_at);
      ALTER TABLE users ALTER COLUMN created_at SET DEFAULT date_trunc('milliseconds', now()),
        ALTER COLUMN updated_at SET DEFAULT date_trunc('milliseconds', now());
      DROP INDEX users_name;
      DROP INDEX users_city;
      DROP INDEX users_age;
      CREATE INDEX users_name ON users (name COLLATE "C", id);
      CREATE INDEX users_city ON users (city COLLATE "C", id);
      CREATE INDEX users_age ON users (age, id);
      CREATE INDEX users_created_at ON users (created_at, id);
      CREATE INDEX users_updated_at ON users (updated_at, id);
      -- PostgreSQL counts a table by reading it; an exact count of all records is kept instead, by
      -- triggers, so it holds whoever writes the table.
      CREATE TABLE users_count (n BIGINT NOT NULL);
      INSERT INTO users_count SELECT count(*) FROM users;
      CREATE FUNCTION users_count_change() RETURNS trigger LANGUAGE plpgsql AS $f$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          UPDATE users_count SET n = n + (SELECT count(*) FROM changed);
        ELSIF TG_OP = 'DELETE' THEN
          UPDATE users_count SET n = n - (SELECT count(*) FROM changed);
        ELSE
          UPDATE users_count SET n = 0;
        END IF;
        RETURN NULL;
      END $f$;
      CREATE TRIGGER users_count_insert AFTER INSERT ON users REFERENCING NEW TABLE AS changed
        FOR EACH STATEMENT EXECUTE FUNCTION users_count_change();
      CREATE TRIGGER users_count_delete AFTER DELETE ON users REFERENCING OLD TABLE AS changed
        FOR EACH STATEMENT EXECUTE FUNCTION users_count_change();
      CREATE TRIGGER users_count_truncate AFTER TRUNCATE ON users
        FOR EACH STATEMENT EXECUTE FUNCTION users_count_change();
      DO $$
      BEGIN
        CREATE EXTENSION IF NOT EXISTS pg_trgm;
      EXCEPTION WHEN OTHERS THEN
        RAISE NOTICE 'pg_trgm is not available (%): search reads the whole table', SQLERRM;
      END $$;
    `,
    backfill: async (client) => {
      // Folded in batches by the service's own fold(), which PostgreSQL's lower() in a C locale is not.
      for (let after = 0; ;) {
        const { rows } = await client.query<{ id: string; name: string; city: string }>(
          'SELECT id, name, city FROM users WHERE id > $1 ORDER BY id LIMIT 10000',
          [after],
        );
        if (rows.length === 0) return;
        await refold(client, rows);
        after = Number(rows.at(-1)?.id);
      }
    },
    // The search indexes are built once over the folded text, not updated row by row as it is filled.
    after: `
      DO $$
      DECLARE trgm TEXT := (SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_trgm');
      BEGIN
        IF trgm IS NOT NULL THEN
          EXECUTE format('CREATE INDEX users_search_name ON users USING gin (name_folded %s.gin_trgm_ops)', trgm);
          EXECUTE format('CREATE INDEX users_search_city ON users USING gin (city_folded %s.gin_trgm_ops)', trgm);
        END IF;
      END $$;
      ANALYZE users;
    `,
  },
  {
    version: 6,
    name: 'search: ς folds to σ, ı stays ı',
    // fold() changed for these two letters only, so only records with them are folded again.
    sql: '',
    backfill: async (client) => {
      const { rows } = await client.query<{ id: string; name: string; city: string }>(
        `SELECT id, name, city FROM users WHERE strpos(name_folded, 'ς') > 0 OR strpos(city_folded, 'ς') > 0
           OR strpos(name, 'ı') > 0 OR strpos(city, 'ı') > 0`,
      );
      await refold(client, rows);
    },
  },
  {
    version: 7,
    name: 'change log and webhook cursors',
    // As SQLite's migration 7: the change log keyed by change version, the oldest version a reader
    // may resume after, the history the versions count in, and each webhook URL's cursor and lease.
    sql: `
      CREATE TABLE changes (
        version BIGINT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('created', 'updated', 'deleted')),
        id BIGINT NOT NULL,
        name TEXT NOT NULL,
        age SMALLINT NOT NULL,
        city TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL,
        record_version INTEGER NOT NULL,
        at TIMESTAMPTZ NOT NULL
      );
      ALTER TABLE store_version ADD COLUMN changes_floor BIGINT NOT NULL DEFAULT 0;
      ALTER TABLE store_version ADD COLUMN changes_history TEXT NOT NULL DEFAULT '';
      UPDATE store_version SET changes_floor = version, changes_history = substr(md5(random()::text), 1, 16);
      CREATE TABLE webhook_cursors (
        url TEXT PRIMARY KEY,
        version BIGINT NOT NULL,
        owner TEXT,
        lease_until TIMESTAMPTZ NOT NULL DEFAULT '-infinity'
      );
      CREATE TABLE webhook_failures (
        url TEXT NOT NULL,
        version BIGINT NOT NULL,
        attempts INTEGER NOT NULL,
        reason TEXT NOT NULL,
        failed_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        PRIMARY KEY (url, version)
      );
    `,
  },
  {
    version: 8,
    name: 'idempotency_keys of batch creates',
    // A POST /users of several records remembers them all under its key, in order (a JSON array of
    // ids); NULL for a single create, whose record is user_id.
    sql: 'ALTER TABLE idempotency_keys ADD COLUMN batch_ids TEXT',
  },
  {
    version: 9,
    name: 'stats: city with age',
    // As SQLite's migration 9: GET /users/stats?group=city from an index-only scan in city order (by
    // code point, as the query groups), not the rows. users_city stays for sorts by (city, id).
    sql: 'CREATE INDEX users_city_age ON users (city COLLATE "C", age)',
  },
  {
    version: 10,
    name: 'change log: the record before an update',
    // As SQLite's migration 10: an update's row keeps the record as it was (its own fields and
    // updatedAt); NULL for creations and deletions, and for the updates logged before it.
    sql: `
      ALTER TABLE changes ADD COLUMN before_name TEXT,
        ADD COLUMN before_age SMALLINT,
        ADD COLUMN before_city TEXT,
        ADD COLUMN before_updated_at TIMESTAMPTZ;
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
    // A migration of a large table takes longer than one request may.
    await client.query('SET LOCAL statement_timeout = 0');
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )`);
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
    for (const migration of pendingMigrations(MIGRATIONS, new Set(rows.map((row) => row.version)))) {
      await client.query(migration.sql);
      await migration.backfill?.(client);
      if (migration.after !== undefined) await client.query(migration.after);
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
