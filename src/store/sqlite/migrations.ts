import type { Database } from 'better-sqlite3';
import { type Migration, pendingMigrations } from '../migrations.ts';
import { fold, StoreOpenError } from '../store.ts';
import { isBusy, lockHeld } from './errors.ts';

/** SQLite's schema, applied in order at start. */
const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'create users',
    sql: `
      CREATE TABLE users (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
        age INTEGER NOT NULL CHECK (age BETWEEN 0 AND 150),
        city TEXT NOT NULL CHECK (length(city) BETWEEN 1 AND 200),
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        version INTEGER NOT NULL DEFAULT 1
      ) STRICT;
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
        version INTEGER NOT NULL
      ) STRICT;
      INSERT INTO store_version (id, version) VALUES (1, 0);
    `,
  },
  {
    version: 3,
    name: 'create idempotency_keys',
    // The Idempotency-Keys of POST /users: a hash of the input, never the input, and the record as
    // first created. created_at is in milliseconds since the epoch, as in users.
    sql: `
      CREATE TABLE idempotency_keys (
        key TEXT PRIMARY KEY NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
        fingerprint TEXT NOT NULL,
        user_json TEXT NOT NULL,
        created_at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
    `,
  },
  {
    version: 4,
    name: 'idempotency_keys keep the record id, not its values',
    // A key remembered the created record's name, age and city, which then outlived a deletion or a
    // correction. It keeps the id now; a replay reads the record as it is.
    sql: `
      ALTER TABLE idempotency_keys ADD COLUMN user_id INTEGER NOT NULL DEFAULT 0;
      UPDATE idempotency_keys SET user_id = json_extract(user_json, '$.id');
      ALTER TABLE idempotency_keys DROP COLUMN user_json;
    `,
  },
  {
    version: 5,
    name: 'queries: folded text, sort indexes, trigram search',
    // Search compares folded text (store.ts `fold`, registered on every connection as the SQL
    // function fold); an FTS5 trigram index over it finds substrings of three characters or more.
    // Every sortable field has an index ending in the id (SQLite adds the rowid to each).
    sql: `
      ALTER TABLE users ADD COLUMN name_folded TEXT NOT NULL DEFAULT '';
      ALTER TABLE users ADD COLUMN city_folded TEXT NOT NULL DEFAULT '';
      UPDATE users SET name_folded = fold(name), city_folded = fold(city);
      CREATE INDEX users_created_at ON users (created_at);
      CREATE INDEX users_updated_at ON users (updated_at);
      CREATE VIRTUAL TABLE users_search USING fts5(
        name_folded, city_folded, content = 'users', content_rowid = 'id', tokenize = 'trigram case_sensitive 1'
      );
      CREATE TRIGGER users_search_insert AFTER INSERT ON users BEGIN
        INSERT INTO users_search (rowid, name_folded, city_folded) VALUES (new.id, new.name_folded, new.city_folded);
      END;
      CREATE TRIGGER users_search_delete AFTER DELETE ON users BEGIN
        INSERT INTO users_search (users_search, rowid, name_folded, city_folded)
          VALUES ('delete', old.id, old.name_folded, old.city_folded);
      END;
      CREATE TRIGGER users_search_update AFTER UPDATE OF name_folded, city_folded ON users BEGIN
        INSERT INTO users_search (users_search, rowid, name_folded, city_folded)
          VALUES ('delete', old.id, old.name_folded, old.city_folded);
        INSERT INTO users_search (rowid, name_folded, city_folded) VALUES (new.id, new.name_folded, new.city_folded);
      END;
      INSERT INTO users_search (users_search) VALUES ('rebuild');
    `,
  },
  {
    version: 6,
    name: 'search: ς folds to σ, ı stays ı',
    // fold() changed for these two letters only, so only records with them are folded again.
    sql: `
      UPDATE users SET name_folded = fold(name), city_folded = fold(city)
        WHERE instr(name_folded, 'ς') > 0 OR instr(city_folded, 'ς') > 0 OR instr(name, 'ı') > 0 OR instr(city, 'ı') > 0;
    `,
  },
  {
    version: 7,
    name: 'change log and webhook cursors',
    // Every committed change, keyed by the change version it produced, written in the change's own
    // transaction (the record as it was for a deletion; times in ms). changes_floor is the oldest
    // version a reader may resume after: every change above it is in the log. changes_history names
    // the history the versions count in: a restore starts a new one. Each webhook URL's
    // cursor is the last version delivered, with the lease of the process delivering to it.
    sql: `
      CREATE TABLE changes (
        version INTEGER PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('created', 'updated', 'deleted')),
        id INTEGER NOT NULL,
        name TEXT NOT NULL,
        age INTEGER NOT NULL,
        city TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        record_version INTEGER NOT NULL,
        at INTEGER NOT NULL
      ) STRICT;
      ALTER TABLE store_version ADD COLUMN changes_floor INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE store_version ADD COLUMN changes_history TEXT NOT NULL DEFAULT '';
      UPDATE store_version SET changes_floor = version, changes_history = lower(hex(randomblob(8)));
      CREATE TABLE webhook_cursors (
        url TEXT PRIMARY KEY NOT NULL,
        version INTEGER NOT NULL,
        owner TEXT,
        lease_until INTEGER NOT NULL DEFAULT 0
      ) STRICT;
      CREATE TABLE webhook_failures (
        url TEXT NOT NULL,
        version INTEGER NOT NULL,
        attempts INTEGER NOT NULL,
        reason TEXT NOT NULL,
        failed_at INTEGER NOT NULL,
        PRIMARY KEY (url, version)
      ) STRICT;
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
    // GET /users/stats?group=city reads each record's city and age: from this index alone, in city
    // order (no sort for the GROUP BY), rather than a look-up of the row for each entry of users_city
    // (15 s for a million records on a busy machine, against under 1 s). users_city stays: a
    // listing sorted by city pages by (city, id), which this index does not hold in that order.
    sql: 'CREATE INDEX users_city_age ON users (city, age)',
  },
  {
    version: 10,
    name: 'change log: the record before an update',
    // An update's row keeps the record as it was too (its own fields and updatedAt, in ms), so a
    // filtered stream can tell a record that left its view. NULL for creations and deletions, and
    // for the updates logged before this migration.
    sql: `
      ALTER TABLE changes ADD COLUMN before_name TEXT;
      ALTER TABLE changes ADD COLUMN before_age INTEGER;
      ALTER TABLE changes ADD COLUMN before_city TEXT;
      ALTER TABLE changes ADD COLUMN before_updated_at INTEGER;
    `,
  },
];

/**
 * A file with tables but no schema_migrations was written by another program: adding this
 * service's tables to it would mix two programs' data in one file. (A newer schema of ours is
 * refused by pendingMigrations; damage inside the file is `user-records check`'s to find.)
 */
export function refuseOthers(db: Database): void {
  const tables = db
    .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")
    .pluck()
    .all() as string[];
  if (tables.length === 0 || tables.includes('schema_migrations')) return;
  const named = tables.slice(0, 3).join(', ') + (tables.length > 3 ? ', ...' : '');
  throw new StoreOpenError(
    `${db.name} holds another program's tables (${named}), not this service's; name another file`,
  );
}

/** The migrations this file has applied; none when it has no schema_migrations yet. A read. */
function appliedOn(db: Database): Set<number> {
  const table = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'").get();
  return new Set(
    table === undefined ? [] : (db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[]),
  );
}

/**
 * Brings the schema up to date. A schema already current is only read: the start takes no lock, so
 * it starts beside another process that holds the write lock (an import, another instance's
 * write). Otherwise the migrations run in one immediate transaction, which waits for the lock as
 * the connection's busy timeout (`busyTimeoutMs`, DATABASE_TIMEOUT_MS) allows, and which looks
 * again at what is applied: several processes starting on the same file apply each migration once.
 * Refuses a database written by a newer version.
 */
export function migrate(db: Database, busyTimeoutMs: number): void {
  db.function('fold', { deterministic: true }, (text: unknown) => fold(String(text)));
  if (pendingMigrations(MIGRATIONS, appliedOn(db)).length === 0) return;
  try {
    applyPending(db);
  } catch (error) {
    if (!isBusy(error)) throw error;
    throw new StoreOpenError(
      lockHeld(db.name, busyTimeoutMs, `while its schema needed migrating to version ${MIGRATIONS.at(-1)?.version}`),
    );
  }
}

function applyPending(db: Database): void {
  const apply = db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      applied_at TEXT NOT NULL
    ) STRICT`);
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const migration of pendingMigrations(MIGRATIONS, appliedOn(db))) {
      db.exec(migration.sql);
      record.run(migration.version, migration.name, new Date().toISOString());
    }
  });
  apply.immediate();
}
