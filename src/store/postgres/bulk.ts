import pg, { type PoolClient } from 'pg';
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
  RECORD_COLUMNS,
  USER_COLUMNS,
  WRITTEN_COLUMNS,
  writtenValues,
} from '../columns.ts';
import { DEFAULT_CHANGES_RETENTION_MS, type UserInput } from '../store.ts';
import { copyIn, type CopyIn, copyOut, copyText } from './copy-text.ts';
import { batchIds, keyRow, storedKey } from '../keys.ts';
import { guarded } from './errors.ts';
import { openPool } from './pool.ts';
import { CHANGES_CHANNEL } from './batch.ts';
import { PostgresStore } from './store.ts';
import { RECORD_TYPES } from './statements.ts';

/** Wakes the streams of running services to read the log (delivered at commit). */
const NOTIFY = `NOTIFY ${CHANGES_CHANNEL}`;

/** Rows read at a time by a snapshot's keys. */
const BATCH = 5000;
/** Records read by one COPY of a snapshot's records. */
const COPY_PAGE = 50_000;
const ignore = () => undefined;
/** PostgreSQL's memory for building the indexes again after an import into an empty table. */
const INDEX_BUILD_MEMORY = '256MB';
/** The longest an import waits to lock an empty users table, while readers queue behind it. */
const LOCK_WAIT = '1s';
const LOCK_NOT_AVAILABLE = '55P03';

/** A row of values in COPY's text format. */
function copyLine(values: readonly unknown[]): string {
  return `${values.map((value) => (typeof value === 'string' ? copyText(value) : String(value))).join('\t')}\n`;
}

/** A snapshot's COPY row (id, the record's own columns, times in ms, version) as a backup keeps it. */
function storedRecordOf(row: readonly string[]): StoredRecord {
  const record: Record<string, unknown> = { id: Number(row[0]) };
  RECORD_FIELDS.forEach((field, i) => {
    const text = row[i + 1] as string;
    record[field] = FIELDS[field].kind === 'text' ? text : Number(text);
  });
  const n = RECORD_FIELDS.length;
  record.createdAt = Number(row[n + 1]);
  record.updatedAt = Number(row[n + 2]);
  record.version = Number(row[n + 3]);
  return record as unknown as StoredRecord;
}

/** A restore's insert: the written columns (folded copies too), then what the service keeps. */
const RESTORE = `INSERT INTO users (${WRITTEN_COLUMNS.join(', ')}, id, created_at, updated_at, version)
           OVERRIDING SYSTEM VALUE
           SELECT * FROM unnest(${[
             ...RECORD_TYPES,
             ...FOLDED_COLUMNS.map(() => 'text'),
             'bigint',
             'timestamptz',
             'timestamptz',
             'integer',
           ]
             .map((type, i) => `$${i + 1}::${type}[]`)
             .join(', ')})`;

/** The record rules the table's constraints keep, for the check. */
const RECORD_RULES = RECORD_FIELDS.map((field) => {
  const spec = FIELDS[field];
  const value = spec.kind === 'text' ? `char_length(${spec.column})` : spec.column;
  return `${value} BETWEEN ${spec.min} AND ${spec.max}`;
}).join(' AND ');

/** The bulk side of a PostgreSQL database: a pool of one connection, so every query runs in the same session. */
export async function openPostgresBulk(url: string, timeoutMs: number): Promise<BulkStore> {
  // One connection that never idles out: a snapshot's REPEATABLE READ transaction lives on it.
  const pool = await openPool(url, {
    max: 1,
    idleTimeoutMillis: 0,
    connectionTimeoutMillis: timeoutMs,
    application_name: 'user-records-cli',
  });
  return new PostgresBulk(pool);
}

class PostgresBulk implements BulkStore {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  /**
   * A write transaction on a connection held until it ends, that first locks the change version's
   * row as the service's writes do: ids are given in commit order, nothing interleaves.
   */
  async #begin(): Promise<PoolClient> {
    const client = await guarded(() => this.#pool.connect());
    client.on('error', ignore);
    try {
      await guarded(() => client.query('BEGIN; SELECT version FROM store_version FOR UPDATE'));
      return client;
    } catch (error) {
      client.release(true);
      throw error;
    }
  }

  async #rollback(client: PoolClient): Promise<void> {
    const ok = await client.query('ROLLBACK').then(
      () => true,
      () => false,
    );
    client.release(ok ? undefined : true);
  }

  async #commit(client: PoolClient, sql: string): Promise<void> {
    try {
      await guarded(() => client.query(sql));
      client.release();
    } catch (error) {
      client.release(true);
      throw error;
    }
  }

  /**
   * Inside the transaction, drops the users table's own indexes (not the primary key's) when it
   * holds no record: building each once over all the rows at the end costs half the database's
   * work of keeping eight indexes in order row by row. A rollback, or a lost connection, puts them
   * back with everything else. Until the commit the table is locked against readers too (they are
   * answered once it is done), so the lock is waited for a moment at most: a reader that holds the
   * table longer keeps the indexes in place. Returns what makes them again, from their own definitions.
   */
  async #deferIndexes(client: PoolClient): Promise<() => Promise<void>> {
    const keep = async () => undefined;
    const { rows } = await client.query<{ empty: boolean }>('SELECT NOT EXISTS (SELECT 1 FROM users) AS empty');
    if (rows[0]?.empty !== true) return keep;
    const { rows: indexes } = await client.query<{ name: string; sql: string }>(
      `SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS sql FROM pg_index AS i
       WHERE i.indrelid = 'users'::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint AS c WHERE c.conindid = i.indexrelid)`,
    );
    if (indexes.length === 0) return keep;
    await client.query(`SAVEPOINT defer_indexes; SET LOCAL lock_timeout = '${LOCK_WAIT}'`);
    try {
      await client.query('LOCK TABLE users IN ACCESS EXCLUSIVE MODE');
    } catch (error) {
      if (!(error instanceof pg.DatabaseError && error.code === LOCK_NOT_AVAILABLE)) throw error;
      await client.query('ROLLBACK TO SAVEPOINT defer_indexes');
      return keep;
    }
    await client.query(
      `RELEASE SAVEPOINT defer_indexes; SET LOCAL lock_timeout = DEFAULT; DROP INDEX ${indexes.map((index) => index.name).join(', ')}`,
    );
    return async () => {
      // Memory for the sorts and the search indexes' build, for this transaction only.
      await client.query(`SET LOCAL maintenance_work_mem = '${INDEX_BUILD_MEMORY}'`);
      for (const { sql } of indexes) await client.query(sql);
    };
  }

  /**
   * The new records go in by COPY, one statement for the whole file, in file order, so the identity
   * column gives ids in that order.
   */
  async importer(): Promise<Importer> {
    const client = await this.#begin();
    let makeIndexes: () => Promise<void>;
    let at: { version: number; lastId: number };
    try {
      // The sequence is not rolled back with the import: ids past the end are refused before COPY takes them.
      const { rows } = await guarded(() =>
        client.query<{ version: string; last: string }>(
          `SELECT version, coalesce(pg_sequence_last_value(pg_get_serial_sequence('users', 'id')::regclass), 0) AS last
           FROM store_version`,
        ),
      );
      at = { version: Number(rows[0]?.version), lastId: Number(rows[0]?.last) };
      makeIndexes = await guarded(() => this.#deferIndexes(client));
    } catch (error) {
      await this.#rollback(client);
      throw error;
    }
    let count = 0;
    let copy: CopyIn | undefined;
    return {
      add: async (rows: readonly UserInput[]) => {
        if (rows.length === 0) return;
        checkImportRoom(at, count + rows.length);
        copy ??= copyIn(client, `COPY users (${WRITTEN_COLUMNS.join(', ')}) FROM STDIN`);
        let lines = '';
        for (const row of rows) lines += copyLine(writtenValues(row));
        count += rows.length;
        await guarded(() => (copy as CopyIn).write(lines));
      },
      commit: async (onStep = ignore) => {
        let firstId: number | undefined;
        let lastId: number | undefined;
        if (copy !== undefined) {
          onStep('storing');
          const stored = await guarded(() => (copy as CopyIn).end());
          copy = undefined;
          if (stored !== count) throw new Error(`COPY stored ${stored} records of ${count}`);
          // The ids are all this transaction's, one after another, since it holds store_version from
          // its start: the last is the sequence's, the first `count` before it.
          const { rows } = await guarded(() =>
            client.query<{ last: string }>(`SELECT currval(pg_get_serial_sequence('users', 'id')) AS last`),
          );
          lastId = Number(rows[0]?.last);
          firstId = lastId - count + 1;
          onStep('logging changes');
          // Each record's creation goes to the change log, in id order.
          await guarded(() =>
            client.query(
              `INSERT INTO changes (${CHANGE_COLUMNS.join(', ')})
               SELECT s.version + u.id - $1 + 1, 'created', ${USER_COLUMNS.map((column) => `u.${column}`).join(', ')},
                 date_trunc('milliseconds', now())
               FROM users AS u CROSS JOIN store_version AS s WHERE u.id BETWEEN $1 AND $2`,
              [firstId, lastId],
            ),
          );
        }
        onStep('building indexes');
        await guarded(makeIndexes);
        onStep('syncing to disk');
        await this.#commit(client, `UPDATE store_version SET version = version + ${count}; ${NOTIFY}; COMMIT`);
        return { firstId, lastId };
      },
      abort: async () => {
        // In the middle of a COPY the connection is closed instead: the server rolls back.
        if (copy === undefined) return this.#rollback(client);
        copy = undefined;
        client.release(true);
      },
    };
  }

  async snapshot(): Promise<Snapshot> {
    // Every query goes through the pool of one connection, so each runs in this one transaction,
    // the service's own listing queries (PostgresStore over this pool) too.
    const client = this.#pool;
    const session = async () =>
      Number((await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid);
    await guarded(() => client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY'));
    const pid = await session();
    const { rows } = await client.query<{ version: string; last: string | null }>(
      `SELECT version, pg_sequence_last_value(pg_get_serial_sequence('users', 'id')::regclass) AS last FROM store_version`,
    );
    const store = new PostgresStore(this.#pool, '', DEFAULT_CHANGES_RETENTION_MS);
    return {
      version: Number(rows[0]?.version),
      lastId: Number(rows[0]?.last ?? 0),
      list: (filter, order) => store.list(filter, order),
      count: async () => Number((await client.query('SELECT count(*) AS n FROM users')).rows[0]?.n),
      async *records() {
        // A page at a time in id order (an index scan, whatever the statistics say), each page one
        // COPY: the server streams it while the last is written, with no row to parse but its text.
        for (let after = 0; ;) {
          let rows = 0;
          for await (const page of copyOut(
            client,
            `COPY (SELECT id, ${RECORD_COLUMNS.join(', ')}, (extract(epoch FROM created_at) * 1000)::bigint,
               (extract(epoch FROM updated_at) * 1000)::bigint, version FROM users WHERE id > ${after}
               ORDER BY id LIMIT ${COPY_PAGE}) TO STDOUT`,
          )) {
            yield page.map(storedRecordOf);
            rows += page.length;
            after = Number(page.at(-1)?.[0]);
          }
          if (rows < COPY_PAGE) return;
        }
      },
      async *keys() {
        for (let after = ''; ;) {
          const { rows: page } = await client.query<{
            key: string;
            fingerprint: string;
            user_id: string;
            batch_ids: string | null;
            created_at: Date;
          }>(
            'SELECT key, fingerprint, user_id, batch_ids, created_at FROM idempotency_keys WHERE key > $1 ORDER BY key COLLATE "C" LIMIT $2',
            [after, BATCH],
          );
          if (page.length === 0) return;
          yield page.map((row): StoredKey => storedKey(row.key, keyRow(row), row.created_at.getTime()));
          after = page.at(-1)?.key as string;
        }
      },
      end: async () => {
        // A connection lost and replaced on the way would have read outside the snapshot.
        const same = (await session()) === pid;
        await client.query('COMMIT');
        if (!same) throw new Error('the connection to PostgreSQL was lost during the snapshot; run the command again');
      },
    };
  }

  async restorer(options: { replace: boolean }): Promise<Restorer> {
    const client = await this.#begin();
    const held = Number((await client.query('SELECT n FROM users_count')).rows[0]?.n ?? 0);
    if (held > 0 && !options.replace) {
      await this.#rollback(client);
      throw new RestoreRefused(`the database holds ${held} records; restore into an empty one, or pass --replace`);
    }
    if (options.replace) await client.query('DELETE FROM idempotency_keys; DELETE FROM users');
    const iso = (ms: number) => new Date(ms).toISOString();
    return {
      addRecords: async (rows) => {
        if (rows.length === 0) return;
        const written = rows.map(writtenValues);
        await client.query(RESTORE, [
          ...WRITTEN_COLUMNS.map((_, i) => written.map((values) => values[i])),
          rows.map((r) => r.id),
          rows.map((r) => iso(r.createdAt)),
          rows.map((r) => iso(r.updatedAt)),
          rows.map((r) => r.version),
        ]);
      },
      addKeys: async (rows) => {
        if (rows.length === 0) return;
        await client.query(
          `INSERT INTO idempotency_keys (key, fingerprint, user_id, batch_ids, created_at)
           SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::timestamptz[])`,
          [
            rows.map((k) => k.key),
            rows.map((k) => k.fingerprint),
            rows.map((k) => k.userId),
            rows.map((k) => batchIds(k.batch)),
            rows.map((k) => iso(k.createdAt)),
          ],
        );
      },
      commit: async ({ version, lastId }, onStep = ignore) => {
        // A new history: the log starts at the restored version, streams that follow the old one
        // are ended (their ids answer 410), and webhooks go on from the restored version.
        // Ids of the old history up to its last version answer 410 from now on, that last one too
        // (a client that saw it missed the restore), even once the new history's versions pass them.
        await client.query(
          `UPDATE store_version SET changes_floor = greatest(version + 1, $1), version = $1,
             changes_history = substr(md5(random()::text), 1, 16)`,
          [version],
        );
        await client.query('DELETE FROM changes');
        await client.query('UPDATE webhook_cursors SET version = $1', [version]);
        // New ids continue after the highest ever given, here or in the backup's database.
        await client.query(
          `SELECT setval(pg_get_serial_sequence('users', 'id'), m) FROM (
             SELECT GREATEST($1::bigint, (SELECT COALESCE(max(id), 0) FROM users),
               COALESCE(pg_sequence_last_value(pg_get_serial_sequence('users', 'id')::regclass), 0)) AS m) AS s
           WHERE m > 0`,
          [lastId],
        );
        onStep('syncing to disk');
        await this.#commit(client, `${NOTIFY}; COMMIT`);
      },
      abort: () => this.#rollback(client),
    };
  }

  async schemaVersion(): Promise<number> {
    const { rows } = await this.#pool.query<{ v: number | null }>('SELECT max(version) AS v FROM schema_migrations');
    return rows[0]?.v ?? 0;
  }

  async check(): Promise<{ problems: string[]; records: number; keys: number }> {
    const client = this.#pool;
    const problems: string[] = [];
    const one = async (sql: string) => Number((await client.query(sql)).rows[0]?.n ?? 0);
    const records = await one('SELECT count(*) AS n FROM users');
    const kept = await one('SELECT n FROM users_count');
    if (kept !== records) problems.push(`the kept count of records is ${kept}, but the table holds ${records}`);
    // Constraints are enforced on every write; ones added NOT VALID, or switched off, would show here.
    const invalid = await one('SELECT count(*) AS n FROM pg_constraint WHERE NOT convalidated');
    if (invalid > 0) problems.push(`${invalid} constraints are not validated`);
    const bad = await one(`SELECT count(*) AS n FROM users WHERE NOT (${RECORD_RULES} AND version >= 1)`);
    if (bad > 0) problems.push(`${bad} records break the record rules`);
    const ahead = await one(
      `SELECT count(*) AS n FROM users WHERE id > COALESCE(pg_sequence_last_value(pg_get_serial_sequence('users', 'id')::regclass), 0)`,
    );
    if (ahead > 0) problems.push(`${ahead} records have ids above the id sequence; new records would collide`);
    const keys = await one('SELECT count(*) AS n FROM idempotency_keys');
    return { problems, records, keys };
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }
}
