import pg, { type Pool, type QueryConfig } from 'pg';
import { CommitListeners } from '../commit-listeners.ts';
import { FOLDED_COLUMNS } from '../columns.ts';
import {
  Binder,
  column as columnOf,
  conditions,
  countQuery,
  type Dialect,
  likeLiteral,
  listQuery,
} from '../list-sql.ts';
import {
  narrows,
  type ChangeLogPage,
  type Commit,
  DEFAULT_CHANGES_RETENTION_MS,
  type HookCursor,
  type HookFailure,
  type BatchCreateResult,
  type CreateResult,
  type IdempotencyKey,
  type ListFilter,
  type ListOrder,
  type SortField,
  type Stats,
  type Precondition,
  type User,
  type UserInput,
  type UserStore,
  type WriteResult,
} from '../store.ts';
import { remembered, rememberedBatch, runAwaiting, type WriteRequest } from '../write-rules.ts';
import { CHANGES_CHANNEL, PostgresBatch } from './batch.ts';
import { guarded, isConnectionFault } from './errors.ts';
import { openPool } from './pool.ts';
import { type ChangeRow, COLUMNS, execStep, toChange, toUser, type UserRow } from './statements.ts';
import { SharedWatch } from '../shared-watch.ts';
import { type StatsRow, statsQuery, toStats } from '../stats-sql.ts';
import type { GroupField } from '../../record/fields.ts';

/** While a LISTEN connection is down, and as a backstop for a lost notification, the log is read this often. */
const WATCH_POLL_MS = 1000;

/** How PostgreSQL writes a listing: `$n` placeholders, times as Date, text compared in the "C" collation. */
const POSTGRES: Dialect = {
  param: (n) => `$${n}`,
  time: (ms) => new Date(ms),
  byCodePoint: (column) => `${column} COLLATE "C"`,
  // With pg_trgm its GIN indexes answer LIKE from three characters; without, the table is read.
  search: (text, bind) => {
    const pattern = bind(`%${likeLiteral(text)}%`);
    return `(${FOLDED_COLUMNS.map((column) => `${column} LIKE ${pattern} ESCAPE '\\'`).join(' OR ')})`;
  },
};

/** Distinct listing queries kept as named prepared statements. */
const STATEMENTS_NAMED = 256;

/**
 * One descending key (other than the id), ties by id ascending, in one statement: the distinct
 * values are walked down the index on (key, id) by a recursive query, and each value's records
 * read in id order from the same index, until the page is full. Sorting instead would read every
 * record that shares the first value (an eighth of the table for a city). Not with a search, whose
 * matches the planner reads by the trigram index or in order, as it estimates cheaper.
 */
function descendingGroups(
  filter: ListFilter,
  field: SortField,
  after: ListOrder['after'],
): { text: string; values: unknown[] } {
  const b = new Binder(POSTGRES);
  const column = columnOf(field, POSTGRES);
  const where = () => conditions({ ...filter, limit: undefined }, POSTGRES, b);
  const value = (v: string | number) =>
    b.bind(field === 'createdAt' || field === 'updatedAt' ? POSTGRES.time(Number(v)) : v);
  const first = [...where()];
  if (after !== undefined) first.push(`${column} <= ${value(after.values[0] as string | number)}`);
  const next = [...where(), `${column} < groups.value`];
  const inGroup = [...where(), `${column} = groups.value`];
  if (after !== undefined) {
    inGroup.push(`(${column} < ${value(after.values[0] as string | number)} OR id > ${b.bind(after.id)})`);
  }
  const limit = filter.limit === undefined ? '' : ` LIMIT ${b.bind(filter.limit)}`;
  const and = (terms: string[]) => (terms.length === 0 ? '' : ` WHERE ${terms.join(' AND ')}`);
  const text = `WITH RECURSIVE groups(value) AS (
      (SELECT ${column} FROM users${and(first)} ORDER BY ${column} DESC LIMIT 1)
      UNION ALL
      SELECT (SELECT ${column} FROM users${and(next)} ORDER BY ${column} DESC LIMIT 1)
      FROM groups WHERE groups.value IS NOT NULL
    )
    SELECT page.* FROM groups CROSS JOIN LATERAL (
      SELECT ${COLUMNS} FROM users${and(inGroup)} ORDER BY id${limit}
    ) AS page${limit}`;
  return { text, values: b.values };
}

export interface PostgresOptions {
  /** Connections this instance may hold. */
  poolSize: number;
  /** Bounds each statement, each wait for a connection and each connection attempt. */
  statementTimeoutMs: number;
  /** How long the change log keeps a change. */
  changesRetentionMs?: number;
}

/** Connects to PostgreSQL and brings the schema up to date. */
export async function openPostgresStore(url: string, options: PostgresOptions): Promise<PostgresStore> {
  const pool = await openPool(url, {
    max: options.poolSize,
    connectionTimeoutMillis: options.statementTimeoutMs,
    statement_timeout: options.statementTimeoutMs,
    idle_in_transaction_session_timeout: options.statementTimeoutMs * 2,
    // A backstop for a server that stopped answering without closing the connection.
    query_timeout: options.statementTimeoutMs + 1000,
    application_name: 'user-records',
    keepAlive: true,
  });
  return new PostgresStore(pool, url, options.changesRetentionMs ?? DEFAULT_CHANGES_RETENTION_MS);
}

export class PostgresStore implements UserStore {
  readonly #pool: Pool;
  readonly #batch: PostgresBatch;
  readonly #listNames = new Map<string, string>();
  readonly #listeners = new CommitListeners();
  readonly #url: string;
  readonly #watchers = new SharedWatch((wake) => this.#watch(wake));

  constructor(pool: Pool, url: string, retentionMs: number) {
    this.#pool = pool;
    this.#url = url;
    this.#batch = new PostgresBatch(
      pool,
      isConnectionFault,
      (changes) => this.#listeners.emit({ changes }),
      retentionMs,
    );
  }

  changes(after: number, limit: number): Promise<ChangeLogPage> {
    return guarded(async () => {
      // One statement, so the floor, the version and the changes are of one moment.
      const { rows } = await this.#pool.query<ChangeRow & { floor: string; now_version: string; history: string }>({
        name: 'changes-page',
        text: `SELECT s.changes_floor AS floor, s.version AS now_version, s.changes_history AS history, c.*
               FROM store_version AS s LEFT JOIN LATERAL (
                 SELECT * FROM changes WHERE version > $1 ORDER BY version LIMIT $2
               ) AS c ON true`,
        values: [after, limit],
      });
      const first = rows[0];
      return {
        floor: Number(first?.floor ?? 0),
        version: Number(first?.now_version ?? 0),
        history: first?.history ?? '',
        changes: rows.filter((row) => row.version !== null).map(toChange),
      };
    });
  }

  /**
   * Other instances' commits arrive as notifications on a connection of its own (LISTEN), opened
   * again a second after it breaks; the log is also read every second in case one was missed.
   */
  watch(wake: () => void): () => void {
    return this.#watchers.add(wake);
  }

  #watch(wake: () => void): () => void {
    let stopped = false;
    let client: pg.Client | undefined;
    const listen = () => {
      if (stopped) return;
      const next = new pg.Client({
        connectionString: this.#url,
        application_name: 'user-records-listen',
        keepAlive: true,
      });
      client = next;
      const retry = () => {
        next.removeAllListeners('error');
        next.on('error', () => undefined);
        void next.end().catch(() => undefined);
        if (client === next && !stopped) setTimeout(listen, 1000).unref();
      };
      next.on('error', retry);
      next.on('notification', () => wake());
      next.connect().then(() => next.query(`LISTEN ${CHANGES_CHANNEL}`).then(() => wake(), retry), retry);
    };
    listen();
    const poll = setInterval(wake, WATCH_POLL_MS);
    poll.unref();
    return () => {
      stopped = true;
      clearInterval(poll);
      client?.removeAllListeners('error');
      client?.on('error', () => undefined);
      void client?.end().catch(() => undefined);
    };
  }

  claimHook(url: string, owner: string, leaseMs: number): Promise<HookCursor | undefined> {
    return this.#write({ kind: 'claimHook', url, owner, leaseMs }) as Promise<HookCursor | undefined>;
  }

  advanceHook(
    url: string,
    owner: string,
    cursor: HookCursor,
    leaseMs: number,
    failures: HookFailure[],
  ): Promise<boolean> {
    return this.#write({ kind: 'advanceHook', url, owner, cursor, leaseMs, failures }) as Promise<boolean>;
  }

  async releaseHook(url: string, owner: string): Promise<void> {
    await this.#write({ kind: 'releaseHook', url, owner });
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

  position(): Promise<{ version: number; history: string }> {
    return guarded(async () => {
      const { rows } = await this.#pool.query<{ version: string; history: string }>({
        name: 'store-position',
        text: 'SELECT version, changes_history AS history FROM store_version',
      });
      return { version: Number(rows[0]?.version), history: rows[0]?.history ?? '' };
    });
  }

  onCommit(listener: (commit: Commit) => void): void {
    this.#listeners.add(listener);
  }

  list(filter: ListFilter, order?: ListOrder): Promise<User[]> {
    const [key] = order?.sort ?? [];
    const { text, values } =
      order?.sort.length === 1 &&
      key !== undefined &&
      key.descending &&
      key.field !== 'id' &&
      filter.search === undefined
        ? descendingGroups(filter, key.field, order.after)
        : listQuery(filter, order, POSTGRES, COLUMNS);
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

  async createMany(inputs: UserInput[], key?: IdempotencyKey): Promise<BatchCreateResult> {
    // As createOnce: a retry of an answered batch is a read.
    if (key !== undefined) {
      const known = await guarded(() => runAwaiting(rememberedBatch(key), (step) => execStep(this.#pool, step)));
      if (known !== undefined) return known;
    }
    return this.#write({ kind: 'createMany', inputs, key }) as Promise<BatchCreateResult>;
  }

  update(id: number, changes: Partial<UserInput>, precondition?: Precondition): Promise<WriteResult> {
    return this.#write({ kind: 'update', id, changes, precondition }) as Promise<WriteResult>;
  }

  remove(id: number, precondition?: Precondition): Promise<WriteResult> {
    return this.#write({ kind: 'remove', id, precondition }) as Promise<WriteResult>;
  }

  count(filter: ListFilter = {}): Promise<number> {
    // Every record: the count the triggers keep (migration 5), not a read of the whole table.
    const { text, values } = !narrows(filter)
      ? { text: 'SELECT n AS count FROM users_count', values: [] }
      : countQuery(filter, POSTGRES);
    return guarded(async () => {
      const result = await this.#pool.query<{ count: string }>({ name: this.#statementName(text), text, values });
      return Number(result.rows[0]?.count ?? 0);
    });
  }

  stats(filter: ListFilter, group: GroupField | undefined, limit: number): Promise<Stats> {
    const { text, values } = statsQuery(filter, group, limit, POSTGRES);
    return guarded(async () => {
      const result = await this.#pool.query<StatsRow>({ name: this.#statementName(text), text, values });
      return toStats(result.rows, group !== undefined);
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

  /**
   * A prepared statement's name for each distinct list query, so each is planned once per
   * connection; past STATEMENTS_NAMED distinct queries (sorts and filters combine into many), the
   * rest are sent unnamed, so neither this map nor the connections' statements grow without end.
   */
  #statementName(text: string): string | undefined {
    let name = this.#listNames.get(text);
    if (name === undefined && this.#listNames.size < STATEMENTS_NAMED) {
      name = `users-list-${this.#listNames.size + 1}`;
      this.#listNames.set(text, name);
    }
    return name;
  }
}
