import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database, { SqliteError, type Statement } from 'better-sqlite3';
import { GroupCommit } from './group-commit.ts';
import { createdChanges, type KeyRow, PRUNE_INTERVAL_MS, replayOf, snapshotOf } from './idempotency-keys.ts';
import { migrate } from './sqlite-migrations.ts';
import {
  type Change,
  type Commit,
  type CreateResult,
  changeOf,
  IDEMPOTENCY_KEY_TTL_MS,
  type IdempotencyKey,
  type ListFilter,
  type Precondition,
  StoreUnavailableError,
  type User,
  type UserInput,
  type UserStore,
  type WriteResult,
} from './store.ts';

interface UserRow {
  id: number;
  name: string;
  age: number;
  city: string;
  created_at: number;
  updated_at: number;
  version: number;
}

function toUser(row: UserRow): User {
  return {
    id: row.id,
    name: row.name,
    age: row.age,
    city: row.city,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
    version: row.version,
  };
}

// Faults of the database or the machine, not of the request: the client may retry later.
const UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|CANTOPEN|READONLY|NOMEM|PROTOCOL)/;

/** Runs a storage call, turning a database fault into StoreUnavailableError. */
async function guarded<T>(work: () => T | Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof SqliteError && UNAVAILABLE.test(error.code)) {
      throw new StoreUnavailableError(`database unavailable: ${error.code}`, { cause: error });
    }
    throw error;
  }
}

const NOT_FOUND: WriteResult = { ok: false, reason: 'not-found' };
const PRECONDITION_FAILED: WriteResult = { ok: false, reason: 'precondition-failed' };

/**
 * Opens (creating if needed) an SQLite database. WAL mode with synchronous=FULL: a commit is
 * fsync'd before it returns, and the group commit makes concurrent writes share that fsync.
 */
export function openSqliteStore(path: string, options: { busyTimeoutMs?: number } = {}): SqliteStore {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma(`busy_timeout = ${Math.trunc(options.busyTimeoutMs ?? 5000)}`);
    // 32 MiB of page cache (the default is 2 MiB): reads of random records in a large table then
    // mostly skip the system call into the OS's cache. It is filled only as pages are read.
    db.pragma('cache_size = -32768');
    migrate(db);
    return new SqliteStore(db);
  } catch (error) {
    db.close();
    throw error;
  }
}

export class SqliteStore implements UserStore {
  readonly #db: Database.Database;
  readonly #commit: GroupCommit;
  readonly #listeners: Array<(commit: Commit) => void> = [];
  readonly #version: Statement<[], { version: number }>;
  readonly #listStatements = new Map<string, Statement<Record<string, unknown>, UserRow>>();
  readonly #get: Statement<[number], UserRow>;
  readonly #insert: Statement<[string, number, string, number, number], UserRow>;
  readonly #update: Statement<[string, number, string, number, number], UserRow>;
  readonly #delete: Statement<[number]>;
  readonly #findKey: Statement<[string, number], KeyRow>;
  readonly #insertKey: Statement<[string, string, string, number]>;
  readonly #dropExpiredKeys: Statement<[number]>;
  readonly #dropExpiredKey: Statement<[string, number]>;
  /** When this store last deleted expired keys (0: not yet). */
  #prunedAt = 0;

  constructor(db: Database.Database) {
    this.#db = db;
    this.#commit = new GroupCommit(db, (commit) => {
      for (const listener of this.#listeners) listener(commit);
    });
    this.#version = db.prepare('SELECT version FROM store_version');
    this.#get = db.prepare('SELECT * FROM users WHERE id = ?');
    this.#insert = db.prepare(
      `INSERT INTO users (name, age, city, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?) RETURNING *`,
    );
    this.#update = db.prepare(
      `UPDATE users SET name = ?, age = ?, city = ?, updated_at = ?, version = version + 1
       WHERE id = ? RETURNING *`,
    );
    this.#delete = db.prepare('DELETE FROM users WHERE id = ?');
    this.#findKey = db.prepare('SELECT fingerprint, user_json FROM idempotency_keys WHERE key = ? AND created_at > ?');
    this.#insertKey = db.prepare(
      'INSERT INTO idempotency_keys (key, fingerprint, user_json, created_at) VALUES (?, ?, ?, ?)',
    );
    this.#dropExpiredKeys = db.prepare('DELETE FROM idempotency_keys WHERE created_at <= ?');
    this.#dropExpiredKey = db.prepare('DELETE FROM idempotency_keys WHERE key = ? AND created_at <= ?');
  }

  list(filter: ListFilter): Promise<User[]> {
    return guarded(() => this.#list(filter));
  }

  #list(filter: ListFilter): User[] {
    const conditions: string[] = [];
    const params: Record<string, unknown> = {};
    if (filter.name !== undefined) conditions.push('name = @name');
    if (filter.age !== undefined) conditions.push('age = @age');
    if (filter.city !== undefined) conditions.push('city = @city');
    if (filter.afterId !== undefined) conditions.push('id > @afterId');
    Object.assign(params, filter);
    const where = conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '';
    const limit = filter.limit !== undefined ? 'LIMIT @limit' : '';
    const sql = `SELECT * FROM users ${where} ORDER BY id ${limit}`;
    let statement = this.#listStatements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
      this.#listStatements.set(sql, statement);
    }
    return statement.all(params).map(toUser);
  }

  get(id: number): Promise<User | undefined> {
    return guarded(() => {
      const row = this.#get.get(id);
      return row === undefined ? undefined : toUser(row);
    });
  }

  create(input: UserInput): Promise<User> {
    return this.#write(() => {
      const now = Date.now();
      return toUser(this.#insert.get(input.name, input.age, input.city, now, now) as UserRow);
    }, changeOf);
  }

  async createOnce(input: UserInput, idempotency: IdempotencyKey): Promise<CreateResult> {
    // A retry of an answered request is a read; only an unknown key needs the write path.
    const known = await guarded(() => this.#remembered(idempotency, Date.now()));
    if (known !== undefined) return known;
    return this.#write(() => {
      const now = Date.now();
      // Checked again inside the write: writes are serialized, so a concurrent twin has either
      // committed its key or is in this very transaction, and is seen here.
      const again = this.#remembered(idempotency, now);
      if (again !== undefined) return again;
      const expiredBefore = now - IDEMPOTENCY_KEY_TTL_MS;
      if (now - this.#prunedAt >= PRUNE_INTERVAL_MS) {
        this.#dropExpiredKeys.run(expiredBefore);
        this.#prunedAt = now;
      }
      this.#dropExpiredKey.run(idempotency.key, expiredBefore);
      const user = toUser(this.#insert.get(input.name, input.age, input.city, now, now) as UserRow);
      this.#insertKey.run(idempotency.key, idempotency.fingerprint, snapshotOf(user), now);
      return { ok: true, user, replayed: false };
    }, createdChanges);
  }

  #remembered(idempotency: IdempotencyKey, now: number): CreateResult | undefined {
    const row = this.#findKey.get(idempotency.key, now - IDEMPOTENCY_KEY_TTL_MS);
    return row === undefined ? undefined : replayOf(row, idempotency.fingerprint);
  }

  update(id: number, changes: Partial<UserInput>, precondition?: Precondition): Promise<WriteResult> {
    return this.#write(() => {
      const current = this.#checked(id, precondition);
      if (!('id' in current)) return current;
      const next = { ...current, ...changes };
      const row = this.#update.get(next.name, next.age, next.city, Date.now(), id) as UserRow;
      return { ok: true, user: toUser(row) };
    }, changeOf);
  }

  remove(id: number, precondition?: Precondition): Promise<WriteResult> {
    return this.#write(
      () => {
        const current = this.#checked(id, precondition);
        if (!('id' in current)) return current;
        this.#delete.run(id);
        return { ok: true, user: current };
      },
      (result) => changeOf(result, true),
    );
  }

  #write<T>(work: () => T, changes: (value: T) => Change[]): Promise<T> {
    return guarded(() => this.#commit.run(work, changes));
  }

  version(): Promise<number> {
    return guarded(() => (this.#version.get() as { version: number }).version);
  }

  onCommit(listener: (commit: Commit) => void): void {
    this.#listeners.push(listener);
  }

  /** The current record, or the reason the write cannot go ahead. */
  #checked(id: number, precondition?: Precondition): User | WriteResult {
    const row = this.#get.get(id);
    if (row === undefined) return NOT_FOUND;
    const current = toUser(row);
    if (precondition !== undefined && !precondition(current)) return PRECONDITION_FAILED;
    return current;
  }

  /** The settings that make an answered write durable, as the connection reports them. */
  durability(): { journalMode: string; synchronous: number } {
    return {
      journalMode: String(this.#db.pragma('journal_mode', { simple: true })),
      synchronous: Number(this.#db.pragma('synchronous', { simple: true })),
    };
  }

  count(): Promise<number> {
    return guarded(() => Number(this.#db.prepare('SELECT count(*) FROM users').pluck().get()));
  }

  ping(): Promise<void> {
    return guarded(() => {
      this.#db.prepare('SELECT 1').get();
    });
  }

  async close(): Promise<void> {
    this.#commit.drain();
    if (this.#db.open) this.#db.close();
  }
}
