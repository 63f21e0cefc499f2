import pg, { type Pool, type PoolClient, type QueryConfig } from 'pg';
import { createdChanges, type KeyRow, PRUNE_INTERVAL_MS, replayOf, snapshotOf } from './idempotency-keys.ts';
import { PostgresBatch } from './postgres-batch.ts';
import { migratePostgres } from './postgres-migrations.ts';
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

export interface PostgresOptions {
  /** Connections this instance may hold. */
  poolSize: number;
  /** Bounds each statement, each wait for a connection and each connection attempt. */
  statementTimeoutMs: number;
}

interface UserRow {
  id: string;
  name: string;
  age: number;
  city: string;
  created_at: Date;
  updated_at: Date;
  version: number;
}

function toUser(row: UserRow): User {
  return {
    id: Number(row.id),
    name: row.name,
    age: row.age,
    city: row.city,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    version: row.version,
  };
}

const COLUMNS = 'id, name, age, city, created_at, updated_at, version';

// The connection broke or the server cannot serve now (SQLSTATE classes 08, 53, 57, 58, or a
// read-only server after a failover): the request may be retried later.
const UNAVAILABLE_STATE = /^(08|53|57|58)|^25006$/;
const CONNECTION_CODE = /^E(CONNREFUSED|CONNRESET|TIMEDOUT|PIPE|HOSTUNREACH|NETUNREACH|NOTFOUND|AI_AGAIN)$/;
const CONNECTION_MESSAGE =
  /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Client was closed)/;

/** Whether an error means the database is out of reach rather than that a statement is wrong. */
export function isConnectionFault(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error instanceof pg.DatabaseError) return UNAVAILABLE_STATE.test(error.code ?? '');
  const code = (error as { code?: unknown }).code;
  return (typeof code === 'string' && CONNECTION_CODE.test(code)) || CONNECTION_MESSAGE.test(error.message);
}

// A transaction the database gave up to resolve a conflict (serialization failure, deadlock): a
// retry will do. The group commit already retries a batch's writes one by one once.
const CONFLICT_STATE = /^40/;

/** Runs a storage call, turning a fault worth a retry into StoreUnavailableError (503). */
async function guarded<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (isConnectionFault(error) || (error instanceof pg.DatabaseError && CONFLICT_STATE.test(error.code ?? ''))) {
      const reason = error instanceof pg.DatabaseError ? `SQLSTATE ${error.code}` : (error as Error).message;
      throw new StoreUnavailableError(`database unavailable: ${reason}`, { cause: error });
    }
    throw error;
  }
}

const NOT_FOUND: WriteResult = { ok: false, reason: 'not-found' };
const PRECONDITION_FAILED: WriteResult = { ok: false, reason: 'precondition-failed' };

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
  readonly #listeners: Array<(commit: Commit) => void> = [];
  /** When this instance last deleted expired keys (0: not yet). */
  #prunedAt = 0;

  constructor(pool: Pool) {
    this.#pool = pool;
    this.#batch = new PostgresBatch(pool, isConnectionFault, (commit) => {
      for (const listener of this.#listeners) listener(commit);
    });
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
    this.#listeners.push(listener);
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

  async get(id: number): Promise<User | undefined> {
    const [user] = await this.#rows({
      name: 'users-get',
      text: `SELECT ${COLUMNS} FROM users WHERE id = $1`,
      values: [id],
    });
    return user;
  }

  create(input: UserInput): Promise<User> {
    return this.#write(async (client) => {
      const { rows } = await client.query<UserRow>({
        name: 'users-insert',
        text: `INSERT INTO users (name, age, city) VALUES ($1, $2, $3) RETURNING ${COLUMNS}`,
        values: [input.name, input.age, input.city],
      });
      return toUser(rows[0] as UserRow);
    }, changeOf);
  }

  async createOnce(input: UserInput, idempotency: IdempotencyKey): Promise<CreateResult> {
    // A retry of an answered request is a read; only an unknown key needs the write path.
    const known = await guarded(() => this.#remembered(this.#pool, idempotency));
    if (known !== undefined) return known;
    return this.#write(async (client) => {
      // Checked again inside the write. Every write transaction first locks the store_version row,
      // so a twin on any instance has either committed its key (seen here) or is in this very
      // batch transaction (seen too). The primary key turns any slip into an error, not a duplicate.
      const again = await this.#remembered(client, idempotency);
      if (again !== undefined) return again;
      if (Date.now() - this.#prunedAt >= PRUNE_INTERVAL_MS) {
        await client.query({
          name: 'idempotency-prune',
          text: `DELETE FROM idempotency_keys WHERE created_at <= now() - $1 * interval '1 millisecond'`,
          values: [IDEMPOTENCY_KEY_TTL_MS],
        });
        this.#prunedAt = Date.now();
      }
      await client.query({
        name: 'idempotency-drop-expired',
        text: `DELETE FROM idempotency_keys WHERE key = $1 AND created_at <= now() - $2 * interval '1 millisecond'`,
        values: [idempotency.key, IDEMPOTENCY_KEY_TTL_MS],
      });
      const { rows } = await client.query<UserRow>({
        name: 'users-insert',
        text: `INSERT INTO users (name, age, city) VALUES ($1, $2, $3) RETURNING ${COLUMNS}`,
        values: [input.name, input.age, input.city],
      });
      const user = toUser(rows[0] as UserRow);
      await client.query({
        name: 'idempotency-insert',
        text: 'INSERT INTO idempotency_keys (key, fingerprint, user_json) VALUES ($1, $2, $3)',
        values: [idempotency.key, idempotency.fingerprint, snapshotOf(user)],
      });
      return { ok: true, user, replayed: false };
    }, createdChanges);
  }

  async #remembered(db: Pool | PoolClient, idempotency: IdempotencyKey): Promise<CreateResult | undefined> {
    const { rows } = await db.query<KeyRow>({
      name: 'idempotency-find',
      text: `SELECT fingerprint, user_json FROM idempotency_keys
             WHERE key = $1 AND created_at > now() - $2 * interval '1 millisecond'`,
      values: [idempotency.key, IDEMPOTENCY_KEY_TTL_MS],
    });
    const row = rows[0];
    return row === undefined ? undefined : replayOf(row, idempotency.fingerprint);
  }

  update(id: number, changes: Partial<UserInput>, precondition?: Precondition): Promise<WriteResult> {
    return this.#write(async (client) => {
      const current = await this.#checked(client, id, precondition);
      if (!('id' in current)) return current;
      const next = { ...current, ...changes };
      const { rows } = await client.query<UserRow>({
        name: 'users-update',
        text: `UPDATE users SET name = $2, age = $3, city = $4, updated_at = now(), version = version + 1
               WHERE id = $1 RETURNING ${COLUMNS}`,
        values: [id, next.name, next.age, next.city],
      });
      return { ok: true, user: toUser(rows[0] as UserRow) };
    }, changeOf);
  }

  remove(id: number, precondition?: Precondition): Promise<WriteResult> {
    return this.#write(
      async (client) => {
        const current = await this.#checked(client, id, precondition);
        if (!('id' in current)) return current;
        await client.query({ name: 'users-delete', text: 'DELETE FROM users WHERE id = $1', values: [id] });
        return { ok: true, user: current };
      },
      (result) => changeOf(result, true),
    );
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

  #write<T>(work: (client: PoolClient) => Promise<T>, changes: (value: T) => Change[]): Promise<T> {
    return guarded(() => this.#batch.run(work, changes));
  }

  /** The current record, locked until the write commits, or the reason the write cannot go ahead. */
  async #checked(client: PoolClient, id: number, precondition?: Precondition): Promise<User | WriteResult> {
    const { rows } = await client.query<UserRow>({
      name: 'users-lock',
      text: `SELECT ${COLUMNS} FROM users WHERE id = $1 FOR UPDATE`,
      values: [id],
    });
    const row = rows[0];
    if (row === undefined) return NOT_FOUND;
    const current = toUser(row);
    if (precondition !== undefined && !precondition(current)) return PRECONDITION_FAILED;
    return current;
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
