import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { IDEMPOTENCY_KEY_TTL_MS, type ListFilter, type User } from '../store.ts';
import type { KeyRow, Step } from '../write-rules.ts';
import { toUser, type UserRow } from './rows.ts';

/** The statements that read, prepared once per connection. */
export class ReadStatements {
  readonly #db: Database.Database;
  readonly #get: Statement<[number], UserRow>;
  readonly #version: Statement<[], { version: number }>;
  readonly #count: Statement<[], number>;
  readonly #findKey: Statement<[string, number], { fingerprint: string; user_id: number }>;
  readonly #lists = new Map<string, Statement<Record<string, unknown>, UserRow>>();

  constructor(db: Database.Database) {
    this.#db = db;
    this.#get = db.prepare('SELECT * FROM users WHERE id = ?');
    this.#version = db.prepare('SELECT version FROM store_version');
    this.#count = db.prepare<[], number>('SELECT count(*) FROM users').pluck();
    this.#findKey = db.prepare('SELECT fingerprint, user_id FROM idempotency_keys WHERE key = ? AND created_at > ?');
  }

  get(id: number): User | undefined {
    const row = this.#get.get(id);
    return row === undefined ? undefined : toUser(row);
  }

  version(): number {
    return (this.#version.get() as { version: number }).version;
  }

  count(): number {
    return this.#count.get() as number;
  }

  findKey(key: string): KeyRow | undefined {
    const row = this.#findKey.get(key, Date.now() - IDEMPOTENCY_KEY_TTL_MS);
    return row === undefined ? undefined : { fingerprint: row.fingerprint, userId: row.user_id };
  }

  list(filter: ListFilter): User[] {
    const conditions: string[] = [];
    if (filter.name !== undefined) conditions.push('name = @name');
    if (filter.age !== undefined) conditions.push('age = @age');
    if (filter.city !== undefined) conditions.push('city = @city');
    if (filter.afterId !== undefined) conditions.push('id > @afterId');
    const where = conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '';
    const limit = filter.limit !== undefined ? 'LIMIT @limit' : '';
    const sql = `SELECT * FROM users ${where} ORDER BY id ${limit}`;
    let statement = this.#lists.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
      this.#lists.set(sql, statement);
    }
    return statement.all({ ...filter }).map(toUser);
  }

  /** The read steps of a program (a replay's look-up). */
  exec(step: Step): unknown {
    switch (step.op) {
      case 'get':
      case 'lock':
        return this.get(step.id);
      case 'findKey':
        return this.findKey(step.key);
      default:
        throw new Error(`${step.op} is a write step`);
    }
  }
}

/** The statements that write, prepared once on the writer's connection. */
export class WriteStatements {
  readonly reads: ReadStatements;
  readonly #insert: Statement<[string, number, string, number, number], UserRow>;
  readonly #update: Statement<[string, number, string, number, number], UserRow>;
  readonly #delete: Statement<[number]>;
  readonly #insertKey: Statement<[string, string, number, number]>;
  readonly #dropExpiredKeys: Statement<[number]>;
  readonly #dropExpiredKey: Statement<[string, number]>;
  readonly setVersion: Statement<[number]>;

  constructor(db: Database.Database) {
    this.reads = new ReadStatements(db);
    this.#insert = db.prepare(
      'INSERT INTO users (name, age, city, created_at, updated_at) VALUES (?, ?, ?, ?, ?) RETURNING *',
    );
    this.#update = db.prepare(
      `UPDATE users SET name = ?, age = ?, city = ?, updated_at = ?, version = version + 1
       WHERE id = ? RETURNING *`,
    );
    this.#delete = db.prepare('DELETE FROM users WHERE id = ?');
    this.#insertKey = db.prepare(
      'INSERT INTO idempotency_keys (key, fingerprint, user_id, created_at) VALUES (?, ?, ?, ?)',
    );
    this.#dropExpiredKeys = db.prepare('DELETE FROM idempotency_keys WHERE created_at <= ?');
    this.#dropExpiredKey = db.prepare('DELETE FROM idempotency_keys WHERE key = ? AND created_at <= ?');
    this.setVersion = db.prepare('UPDATE store_version SET version = ?');
  }

  /** Runs one step of a write program; SQLite needs no row locks (the writer holds the file's). */
  exec(step: Step): unknown {
    switch (step.op) {
      case 'get':
      case 'lock':
      case 'findKey':
        return this.reads.exec(step);
      case 'insert': {
        const now = Date.now();
        const { name, age, city } = step.input;
        return toUser(this.#insert.get(name, age, city, now, now) as UserRow);
      }
      case 'update': {
        const { name, age, city } = step.input;
        return toUser(this.#update.get(name, age, city, Date.now(), step.id) as UserRow);
      }
      case 'delete':
        this.#delete.run(step.id);
        return undefined;
      case 'pruneKeys':
        this.#dropExpiredKeys.run(Date.now() - IDEMPOTENCY_KEY_TTL_MS);
        return undefined;
      case 'dropExpiredKey':
        this.#dropExpiredKey.run(step.key, Date.now() - IDEMPOTENCY_KEY_TTL_MS);
        return undefined;
      case 'rememberKey':
        this.#insertKey.run(step.key, step.fingerprint, step.userId, Date.now());
        return undefined;
    }
  }
}
