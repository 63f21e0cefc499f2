import { statSync } from 'node:fs';
import type Database from 'better-sqlite3';
import {
  type BulkStore,
  type Importer,
  type Restorer,
  RestoreRefused,
  type Snapshot,
  type StoredKey,
  type StoredRecord,
  checkImportRoom,
} from '../bulk.ts';
import { FIELDS, RECORD_FIELDS } from '../../record/fields.ts';
import {
  CHANGE_COLUMNS,
  FOLDED_COLUMNS,
  placeholders,
  USER_COLUMNS,
  WRITTEN_COLUMNS,
  writtenValues,
} from '../columns.ts';
import { StoreOpenError, StoreUnavailableError, type UserInput } from '../store.ts';
import { batchIds, keyRow, storedKey } from '../keys.ts';
import { openConnection } from './connection.ts';
import { openBetterSqlite } from './native-objects.ts';
import { asUnavailable, isBusy, lockHeld } from './errors.ts';
import { ReadStatements } from './statements.ts';

const FOLDED = FOLDED_COLUMNS.join(', ');
const ignoreStep = () => undefined;

/** A row of USER_COLUMNS (times in ms) as a backup keeps it. */
function toStoredRecord(row: Record<string, number | string>): StoredRecord {
  const record: Record<string, unknown> = { id: row.id };
  for (const field of RECORD_FIELDS) record[field] = row[FIELDS[field].column];
  record.createdAt = row.created_at;
  record.updatedAt = row.updated_at;
  record.version = row.version;
  return record as unknown as StoredRecord;
}

/** Rows read from the database at a time by a snapshot's records and keys. */
const BATCH = 1000;

/**
 * The page cache of the commands' connection, in KiB. They read or write each page about once (an
 * import appends, then sorts its indexes; an export or a backup reads in id order), so the
 * service's larger cache would only hold pages never read again: with it, an import of 1M records
 * peaked above 200 MB, with this one at about 115 MB, and no slower.
 */
const CACHE_KIB = 2048;

/**
 * The bulk side of an SQLite file: one connection of its own, waiting up to `busyTimeoutMs` for the
 * write lock. `existing`: a file that is missing or empty is refused, not made.
 */
export async function openSqliteBulk(path: string, busyTimeoutMs: number, existing = false): Promise<BulkStore> {
  if (existing && path !== ':memory:') refuseMissing(path);
  const db = openConnection(path, { busyTimeoutMs, migrate: true });
  db.pragma(`cache_size = -${CACHE_KIB}`);
  return new SqliteBulk(db, busyTimeoutMs);
}

/** Refuses a database file that does not exist or holds nothing (a mistyped path, a file never written). */
function refuseMissing(path: string): void {
  let size: number;
  try {
    size = statSync(path).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return; // openConnection names other faults
    throw new StoreOpenError(
      `no database file at ${path} (DATABASE_URL); serve, import, restore and migrate make one, this command only reads`,
    );
  }
  if (size === 0) throw new StoreOpenError(`${path} is empty: no database has been written to it (DATABASE_URL)`);
  // An SQLite file with no tables yet is as empty: this command would make the schema in it.
  let tables: number;
  try {
    const db = openBetterSqlite(path, { readonly: true, fileMustExist: true });
    try {
      tables = (db.prepare("SELECT count(*) AS n FROM sqlite_schema WHERE type = 'table'").get() as { n: number }).n;
    } finally {
      db.close();
    }
  } catch {
    return; // not SQLite, or unreadable: openConnection names it
  }
  if (tables === 0) throw new StoreOpenError(`${path} is empty: no database has been written to it (DATABASE_URL)`);
}

class SqliteBulk implements BulkStore {
  readonly #db: Database.Database;
  readonly #busyTimeoutMs: number;

  constructor(db: Database.Database, busyTimeoutMs: number) {
    this.#db = db;
    this.#busyTimeoutMs = busyTimeoutMs;
  }

  /** BEGIN IMMEDIATE takes the write lock now, so every id is given in file order and nothing interleaves. */
  #begin(): void {
    try {
      this.#db.exec('BEGIN IMMEDIATE');
    } catch (error) {
      throw this.#lockHeld(error, 'while this command waited to write');
    }
  }

  /** A busy lock in the service's words (errors.ts), any other fault as asUnavailable makes it. */
  #lockHeld(error: unknown, while_: string): unknown {
    return isBusy(error)
      ? new StoreUnavailableError(lockHeld(this.#db.name, this.#busyTimeoutMs, while_), { cause: error })
      : asUnavailable(error);
  }

  #rollback(): void {
    if (this.#db.inTransaction) this.#db.exec('ROLLBACK');
  }

  /**
   * Inside the transaction, stops the search index from being filled row by row (its trigger is
   * dropped, to be made again from its own SQL before the commit): filling it once for all the new
   * rows is four to five times faster. A rollback puts the trigger back with everything else.
   * Returns what fills the index for the rows from `firstId` on and restores the trigger.
   */
  #deferSearchIndex(): (firstId: number) => void {
    const sql = this.#db
      .prepare(`SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'users_search_insert'`)
      .pluck()
      .get() as string | undefined;
    if (sql === undefined) return () => undefined;
    this.#db.exec('DROP TRIGGER users_search_insert');
    return (firstId) => {
      this.#db
        .prepare(`INSERT INTO users_search (rowid, ${FOLDED}) SELECT id, ${FOLDED} FROM users WHERE id >= ?`)
        .run(firstId);
      this.#db.exec(sql);
    };
  }

  /**
   * Inside the transaction, drops the users table's own indexes when it holds no record: building
   * each once over the sorted rows at the end costs less than keeping six indexes in order row by
   * row (a third of a million-row import). A rollback puts them back with everything else. Returns
   * what makes them again, from their own SQL, before the commit.
   */
  #deferIndexes(): () => void {
    const empty = this.#db.prepare('SELECT NOT EXISTS (SELECT 1 FROM users)').pluck().get() === 1;
    if (!empty) return () => undefined;
    const indexes = this.#db
      .prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'users' AND sql IS NOT NULL`)
      .all() as Array<{ name: string; sql: string }>;
    for (const { name } of indexes) this.#db.exec(`DROP INDEX "${name}"`);
    return () => {
      for (const { sql } of indexes) this.#db.exec(sql);
    };
  }

  async importer(): Promise<Importer> {
    const db = this.#db;
    const insert = db.prepare(
      `INSERT INTO users (${WRITTEN_COLUMNS.join(', ')}, created_at, updated_at) VALUES (${placeholders(WRITTEN_COLUMNS.length + 2)})`,
    );
    this.#begin();
    const at = {
      version: db.prepare<[], number>('SELECT version FROM store_version').pluck().get() as number,
      lastId:
        (db.prepare(`SELECT seq FROM sqlite_sequence WHERE name = 'users'`).pluck().get() as number | undefined) ?? 0,
    };
    const fillSearch = this.#deferSearchIndex();
    const makeIndexes = this.#deferIndexes();
    let firstId: number | undefined;
    let lastId: number | undefined;
    let count = 0;
    return {
      add: async (rows: readonly UserInput[]) => {
        checkImportRoom(at, count + rows.length);
        const now = Date.now();
        for (const row of rows) {
          lastId = Number(insert.run(...writtenValues(row), now, now).lastInsertRowid);
          firstId ??= lastId;
          count++;
        }
      },
      commit: async (onStep = ignoreStep) => {
        onStep('building indexes');
        makeIndexes();
        onStep('filling the search index');
        fillSearch(firstId ?? Number.MAX_SAFE_INTEGER);
        onStep('logging changes');
        // Each record's creation goes to the change log, in id order (all ids from firstId on are
        // this transaction's: it has held the write lock from its start).
        db.prepare(
          `INSERT INTO changes (${CHANGE_COLUMNS.join(', ')})
           SELECT (SELECT version FROM store_version) + row_number() OVER (ORDER BY id), 'created', ${USER_COLUMNS.join(', ')}, ?
           FROM users WHERE id >= ?`,
        ).run(Date.now(), firstId ?? Number.MAX_SAFE_INTEGER);
        db.prepare('UPDATE store_version SET version = version + ?').run(count);
        onStep('syncing to disk');
        db.exec('COMMIT');
        return { firstId, lastId };
      },
      abort: async () => this.#rollback(),
    };
  }

  async snapshot(): Promise<Snapshot> {
    const db = this.#db;
    const reads = new ReadStatements(db);
    // A read transaction in WAL mode sees one moment from its first read on, whoever writes meanwhile.
    db.exec('BEGIN');
    const version = reads.version();
    const lastId = Number(
      (db.prepare(`SELECT seq FROM sqlite_sequence WHERE name = 'users'`).pluck().get() as number | undefined) ?? 0,
    );
    const records = db.prepare(`SELECT ${USER_COLUMNS.join(', ')} FROM users WHERE id > ? ORDER BY id LIMIT ?`);
    const keys = db.prepare(
      'SELECT key, fingerprint, user_id, batch_ids, created_at FROM idempotency_keys WHERE key > ? ORDER BY key LIMIT ?',
    );
    return {
      version,
      lastId,
      list: async (filter, order) => reads.list(filter, order),
      count: async () => reads.count({}),
      async *records() {
        for (let after = 0; ;) {
          const rows = records.all(after, BATCH) as Array<Record<string, number | string>>;
          if (rows.length === 0) return;
          yield rows.map(toStoredRecord);
          after = rows.at(-1)?.id as number;
        }
      },
      async *keys() {
        for (let after = ''; ;) {
          const rows = keys.all(after, BATCH) as Array<{
            key: string;
            fingerprint: string;
            user_id: number;
            batch_ids: string | null;
            created_at: number;
          }>;
          if (rows.length === 0) return;
          yield rows.map((row): StoredKey => storedKey(row.key, keyRow(row), row.created_at));
          after = rows.at(-1)?.key as string;
        }
      },
      end: async () => this.#rollback(),
    };
  }

  async restorer(options: { replace: boolean }): Promise<Restorer> {
    const db = this.#db;
    this.#begin();
    const held = db.prepare('SELECT count(*) FROM users').pluck().get() as number;
    if (held > 0 && !options.replace) {
      this.#rollback();
      throw new RestoreRefused(`the database holds ${held} records; restore into an empty one, or pass --replace`);
    }
    if (options.replace) db.exec('DELETE FROM users; DELETE FROM idempotency_keys;');
    // Every record is new now: the search index is filled for all of them at the end, and the
    // table's indexes are made once over them.
    const fillSearch = this.#deferSearchIndex();
    const makeIndexes = this.#deferIndexes();
    const insert = db.prepare(
      `INSERT INTO users (${WRITTEN_COLUMNS.join(', ')}, id, created_at, updated_at, version)
       VALUES (${placeholders(WRITTEN_COLUMNS.length + 4)})`,
    );
    const insertKey = db.prepare(
      'INSERT INTO idempotency_keys (key, fingerprint, user_id, batch_ids, created_at) VALUES (?, ?, ?, ?, ?)',
    );
    return {
      addRecords: async (rows) => {
        for (const r of rows) {
          insert.run(...writtenValues(r), r.id, r.createdAt, r.updatedAt, r.version);
        }
      },
      addKeys: async (rows) => {
        for (const k of rows) insertKey.run(k.key, k.fingerprint, k.userId, batchIds(k.batch), k.createdAt);
      },
      commit: async ({ version, lastId }, onStep = ignoreStep) => {
        onStep('building indexes');
        makeIndexes();
        onStep('filling the search index');
        fillSearch(0);
        // A new history: the log starts at the restored version, streams that follow the old one
        // are ended (their ids answer 410), and webhooks go on from the restored version.
        // Ids of the old history up to its last version answer 410 from now on, that last one too
        // (a client that saw it missed the restore), even once the new history's versions pass them.
        db.prepare(
          'UPDATE store_version SET changes_floor = max(version + 1, ?), version = ?, changes_history = lower(hex(randomblob(8)))',
        ).run(version, version);
        db.exec('DELETE FROM changes');
        db.prepare('UPDATE webhook_cursors SET version = ?').run(version);
        // AUTOINCREMENT keeps the highest id ever given here: new ids continue after it, never reusing one.
        const seq = db.prepare(`UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'users'`).run(lastId);
        if (seq.changes === 0 && lastId > 0) {
          db.prepare(`INSERT INTO sqlite_sequence (name, seq) VALUES ('users', ?)`).run(lastId);
        }
        onStep('syncing to disk');
        db.exec('COMMIT');
      },
      abort: async () => this.#rollback(),
    };
  }

  async schemaVersion(): Promise<number> {
    return (this.#db.prepare('SELECT max(version) FROM schema_migrations').pluck().get() as number | null) ?? 0;
  }

  async check(): Promise<{ problems: string[]; records: number; keys: number }> {
    const db = this.#db;
    const problems = (db.pragma('integrity_check(20)', { simple: false }) as Array<{ integrity_check: string }>)
      .map((row) => row.integrity_check)
      .filter((text) => text !== 'ok');
    const foreign = db.pragma('foreign_key_check') as unknown[];
    if (foreign.length > 0) problems.push(`${foreign.length} foreign key faults`);
    try {
      // FTS5's own check is run as a write: it waits for the write lock as an import does.
      db.exec(`INSERT INTO users_search (users_search) VALUES ('integrity-check')`);
    } catch (error) {
      if (isBusy(error)) throw this.#lockHeld(error, 'while this command waited to check the search index');
      problems.push(`the search index does not match the records: ${(error as Error).message}`);
    }
    const records = db.prepare('SELECT count(*) FROM users').pluck().get() as number;
    const keys = db.prepare('SELECT count(*) FROM idempotency_keys').pluck().get() as number;
    return { problems, records, keys };
  }

  async close(): Promise<void> {
    this.#rollback();
    this.#db.close();
  }
}
