import pg, { type Pool, type QueryConfig } from 'pg';
import { CommitListeners } from '../commit-listeners.ts';
import type {
  Commit,
  CreateResult,
  IdempotencyKey,
  ListFilter,
  Precondition,
  User,
  UserInput,
  UserStore,
  WriteResult,
} from '../store.ts';
import { remembered, runAwaiting, type WriteRequest } from '../write-rules.ts';
import { PostgresBatch } from './batch.ts';
import { guarded, isConnectionFault } from './errors.ts';
import { migratePostgres } from './migrations.ts';
import { COLUMNS, execStep, toUser, type UserRow } from './statements.ts';

export interface PostgresOptions {
  /** Connections this instance may hold. */
  poolSize: number;
  /** Bounds each statement, each wait for a connection and each connection attempt. */
  statementTimeoutMs: number;
}

/** Connects to PostgreSQL and brings the schema up to date. */
export async function openPostgresStore(url: string, options: PostgresOptions): Promise<PostgresStore> {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize,
    connectionTimeoutMillis: options.statementTimeoutMs,
    statement_timeout: options.statementTimeoutMs,
    idle_in_transaction_session_timeout: options.statementTimeoutMs * 2,
    // A backstop for a server that stopped answering without closing the connection.
    query_timeout: options.statementTimeoutMs + 1000,
    application_name: 'user-records',
    keepAlive: true,
  });
  // A pooled idle connection that breaks (the server restarted) is dropped by the pool; the next
  // request that needs the database reports the fault. Without a listener it would crash the process.
  pool.on('error', () => undefined);
  try {
    await guarded(() => migratePostgres(pool));
    return new PostgresStore(pool);
  } catch (error) {
    await pool.end();
    throw error;
  }
}

export class PostgresStore implements UserStore {
  readonly #pool: Pool;
  readonly #batch: PostgresBatch;
  readonly #listNames = new Map<string, string>();
  readonly #listeners = new CommitListeners();

  constructor(pool: Pool) {
    this.#pool = pool;
    this.#batch = new PostgresBatch(pool, isConnectionFault, (changes) => this.#listeners.emit({ changes }));
  }

  version(): Promise<number> {
    return guarded(async () => {
      const { rows } = await this.#pool.query<{ version: string }>({
        name: 'store-version',
        text: 'SELECT version FROM store_version',
      });
      return Number(rows[0]?.version);
    });
  }

  onCommit(listener: (commit: Commit) => void): void {
    this.#listeners.add(listener);
  }

  list(filter: ListFilter): Promise<User[]> {
    const conditions: string[] = [];
    const values: unknown[] = [];
    for (const column of ['name', 'age', 'city'] as const) {
      const value = filter[column];
      if (value === undefined) continue;
      values.push(value);
      conditions.push(`${column} = $${values.length}`);
    }
    if (filter.afterId !== undefined) {
      values.push(filter.afterId);
      conditions.push(`id > $${values.length}`);
    }
    const where = conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '';
    if (filter.limit !== undefined) values.push(filter.limit);
    const limit = filter.limit !== undefined ? `LIMIT $${values.length}` : '';
    const text = `SELECT ${COLUMNS} FROM users ${where} ORDER BY id ${limit}`;
    return this.#rows({ name: this.#statementName(text), text, values });
  }

  get(id: number): Promise<User | undefined> {
    return guarded(() => execStep(this.#pool, { op: 'get', id }) as Promise<User | undefined>);
  }

  create(input: UserInput): Promise<User> {
    return this.#write({ kind: 'create', input }) as Promise<User>;
  }

  async createOnce(input: UserInput, key: IdempotencyKey): Promise<CreateResult> {
    // A retry of an answered request is a read; only an unknown key needs the write path.
    const known = await guarded(() => runAwaiting(remembered(key), (step) => execStep(this.#pool, step)));
    if (known !== undefined) return known;
    return this.#write({ kind: 'createOnce', input, key }) as Promise<CreateResult>;
  }

  update(id: number, changes: Partial<UserInput>, precondition?: Precondition): Promise<WriteResult> {
    return this.#write({ kind: 'update', id, changes, precondition }) as Promise<WriteResult>;
  }

  remove(id: number, precondition?: Precondition): Promise<WriteResult> {
    return this.#write({ kind: 'remove', id, precondition }) as Promise<WriteResult>;
  }

  count(): Promise<number> {
    return guarded(async () => {
      const result = await this.#pool.query<{ count: string }>('SELECT count(*) FROM users');
      return Number(result.rows[0]?.count ?? 0);
    });
  }

  ping(): Promise<void> {
    return guarded(async () => {
      await this.#pool.query('SELECT 1');
    });
  }

  async close(): Promise<void> {
    await this.#batch.whenIdle();
    if (!this.#pool.ended) await this.#pool.end();
  }

  #rows(query: QueryConfig): Promise<User[]> {
    return guarded(async () => (await this.#pool.query<UserRow>(query)).rows.map(toUser));
  }

  #write(request: WriteRequest): Promise<unknown> {
    return guarded(() => this.#batch.run(request));
  }

  /** A prepared statement's name for each distinct list query, so each is planned once per connection. */
  #statementName(text: string): string {
    let name = this.#listNames.get(text);
    if (name === undefined) {
      name = `users-list-${this.#listNames.size + 1}`;
      this.#listNames.set(text, name);
    }
    return name;
  }
}
