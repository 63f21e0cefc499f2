import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { RECORD_FIELDS } from '../../record/fields.ts';
import {
  BEFORE_COLUMNS,
  beforeOf,
  beforeValues,
  CHANGE_COLUMNS,
  FOLDED_COLUMNS,
  placeholders,
  type UserRow,
  userReader,
  WRITTEN_COLUMNS,
  writtenValues,
} from '../columns.ts';
import { Binder, COLUMN, conditions, countQuery, type Dialect, listQuery } from '../list-sql.ts';
import {
  type Change,
  type ChangeKind,
  type ChangeLogPage,
  fold,
  IDEMPOTENCY_KEY_TTL_MS,
  narrows,
  type ListFilter,
  type ListOrder,
  type SortField,
  type Stats,
  type User,
} from '../store.ts';
import type { GroupField } from '../../record/fields.ts';
import { batchIds, keyRow } from '../keys.ts';
import { type StatsRow, statsQuery, toStats } from '../stats-sql.ts';
import type { HookRow, KeyRow, Step } from '../write-rules.ts';

/** A users row as SQLite returns it (times in milliseconds since the epoch) as a User. */
const toUser = userReader({ id: (value) => value as number, time: (value) => new Date(value as number) });

/** A change log row: the record's fields with its own version as record_version, times in ms. */
type ChangeRow = UserRow & {
  version: number;
  kind: ChangeKind;
  record_version: number;
  at: number;
};

const msTime = (value: unknown) => new Date(value as number);

function toChange(row: ChangeRow): Change {
  const user = toUser({ ...row, version: row.record_version });
  const change: Change = { version: row.version, kind: row.kind, user, at: new Date(row.at) };
  const before = row.kind === 'updated' ? beforeOf(row, user, msTime) : undefined;
  if (before !== undefined) change.before = before;
  return change;
}

/** Search by trigram index from three characters; shorter text is looked for row by row. */
const TRIGRAM = 3;

/**
 * A sorted search with fewer matches than this reads them all by the trigram index and sorts them;
 * with more, it reads records in the sort's order and keeps those that match, which finds a page
 * after reading about (page size × records / matches) of them.
 */
const FEW_MATCHES = 4000;

/**
 * Distinct listing statements a reader thread prepares before it is replaced: none is ever let go
 * while its thread runs (native-objects.ts), and a thread's end frees them all.
 */
const STATEMENTS_KEPT = 256;

const SEARCHED = `{${FOLDED_COLUMNS.join(' ')}}`;

/** The trigram tokenizer's phrase for a substring of the folded searched fields; quotes inside doubled. */
function phrase(text: string): string {
  return `${SEARCHED}: "${text.replaceAll('"', '""')}"`;
}

/** Whether the trigram index can answer a search for this (folded) text. */
function indexed(text: string): boolean {
  return [...text].length >= TRIGRAM;
}

/** How SQLite writes a listing: `?` placeholders, times in ms, text in byte (code point) order. */
const SQLITE: Dialect = {
  param: () => '?',
  time: (ms) => ms,
  byCodePoint: (column) => column,
  ageInIdOrder: (column) => `+${column}`,
  search: (text, bind) =>
    indexed(text)
      ? `id IN (SELECT rowid FROM users_search WHERE users_search MATCH ${bind(phrase(text))})`
      : SCAN.search(text, bind),
};

/** The same, with a search that looks at each record read (no index). */
const SCAN: Dialect = {
  ...SQLITE,
  search: (text, bind) => `(${FOLDED_COLUMNS.map((column) => `instr(${column}, ${bind(text)}) > 0`).join(' OR ')})`,
};

/** The statements that read, prepared once per connection. */
export class ReadStatements {
  readonly #db: Database.Database;
  readonly #get: Statement<[number], UserRow>;
  readonly #version: Statement<[], { version: number }>;
  readonly #count: Statement<[], number>;
  readonly #findKey: Statement<[string, number], { fingerprint: string; user_id: number; batch_ids: string | null }>;
  readonly #lists = new Map<string, Statement<unknown[], UserRow>>();
  readonly #log: Statement<[], { version: number; changes_floor: number; changes_history: string }>;
  readonly #changes: Statement<[number, number], ChangeRow>;
  readonly #hook: Statement<[string], { version: number; owner: string | null; lease_until: number }>;
  readonly #checkpoint: (() => void) | undefined;

  /** `checkpoint` runs before each listing statement: a reader thread's read given up throws there. */
  constructor(db: Database.Database, checkpoint?: () => void) {
    this.#db = db;
    this.#checkpoint = checkpoint;
    this.#log = db.prepare('SELECT version, changes_floor, changes_history FROM store_version');
    this.#changes = db.prepare('SELECT * FROM changes WHERE version > ? ORDER BY version LIMIT ?');
    this.#hook = db.prepare('SELECT version, owner, lease_until FROM webhook_cursors WHERE url = ?');
    this.#get = db.prepare('SELECT * FROM users WHERE id = ?');
    this.#version = db.prepare('SELECT version FROM store_version');
    this.#count = db.prepare<[], number>('SELECT count(*) FROM users').pluck();
    this.#findKey = db.prepare(
      'SELECT fingerprint, user_id, batch_ids FROM idempotency_keys WHERE key = ? AND created_at > ?',
    );
  }

  get(id: number): User | undefined {
    const row = this.#get.get(id);
    return row === undefined ? undefined : toUser(row);
  }

  version(): number {
    return (this.#version.get() as { version: number }).version;
  }

  position(): { version: number; history: string } {
    const log = this.#log.get() as { version: number; changes_history: string };
    return { version: log.version, history: log.changes_history };
  }

  count(filter: ListFilter = {}): number {
    const { search, ...others } = filter;
    if (!narrows(filter)) return this.#count.get() as number;
    const folded = search === undefined ? undefined : fold(search);
    if (folded !== undefined && indexed(folded) && !narrows(others)) {
      // The search alone: its index counts the matches without reading a record.
      const matches = this.#statement('SELECT count(*) AS count FROM users_search WHERE users_search MATCH ?');
      return (matches.get(phrase(folded)) as unknown as { count: number }).count;
    }
    const { text, values } = countQuery(filter, SQLITE);
    return Number((this.#statement(text).get(...values) as unknown as { count: number }).count);
  }

  /** Counts by group: a search by its trigram index from three characters, as a count. */
  stats(filter: ListFilter, group: GroupField | undefined, limit: number): Stats {
    const { text, values } = statsQuery(filter, group, limit, SQLITE);
    const rows = this.#statement(text).all(...values) as unknown as StatsRow[];
    return toStats(rows, group !== undefined);
  }

  changes(after: number, limit: number): ChangeLogPage {
    const log = this.#log.get() as { version: number; changes_floor: number; changes_history: string };
    const changes = limit > 0 ? this.#changes.all(after, limit).map(toChange) : [];
    return { floor: log.changes_floor, version: log.version, history: log.changes_history, changes };
  }

  hook(url: string): HookRow | undefined {
    const row = this.#hook.get(url);
    return row === undefined
      ? undefined
      : { version: row.version, owner: row.owner, leaseLive: row.lease_until > Date.now() };
  }

  findKey(key: string): KeyRow | undefined {
    const row = this.#findKey.get(key, Date.now() - IDEMPOTENCY_KEY_TTL_MS);
    return row === undefined ? undefined : keyRow(row);
  }

  /**
   * Records in creation order, or sorted. One descending key (other than the id) is read a group
   * of equal values at a time, each by the index on (key, id): a page then costs the same however
   * many records share a value (SQLite would otherwise sort every equal value to find the first
   * ids). A search in id order walks the trigram index in rowid order and stops at the page's end;
   * in another order, it reads few matches by the index, or many in the sort's order (FEW_MATCHES).
   */
  list(filter: ListFilter, order?: ListOrder): User[] {
    const sort = order?.sort ?? [];
    const [key] = sort;
    const folded = filter.search === undefined ? undefined : fold(filter.search);
    const byId = sort.length === 0 || (sort.length === 1 && key?.field === 'id');
    if (folded !== undefined && indexed(folded) && byId) {
      return this.#searchById(filter, folded, key?.descending ?? false, order?.after?.id);
    }
    // Few matches are read by the index and sorted; otherwise records are read in order and checked.
    const fromIndex = folded !== undefined && indexed(folded) && this.#fewMatches(folded);
    if (sort.length === 1 && key !== undefined && key.descending && key.field !== 'id' && !fromIndex) {
      return this.#descendingGroups(filter, key.field, order?.after, SCAN);
    }
    const dialect = fromIndex ? SQLITE : SCAN;
    const { text, values } = listQuery(filter, order, dialect, '*');
    return this.#statement(text)
      .all(...values)
      .map(toUser);
  }

  /** Whether the trigram index finds fewer than FEW_MATCHES records for the text. */
  #fewMatches(folded: string): boolean {
    const probe = this.#statement(
      `SELECT count(*) AS count FROM (SELECT rowid FROM users_search WHERE users_search MATCH ? LIMIT ${FEW_MATCHES})`,
    );
    return (probe.get(phrase(folded)) as unknown as { count: number }).count < FEW_MATCHES;
  }

  /** A search in id order: the trigram index yields matches in rowid order, so a page reads only its own. */
  #searchById(filter: ListFilter, folded: string, descending: boolean, afterCursor: number | undefined): User[] {
    const b = new Binder(SQLITE);
    const where = [`users_search MATCH ${b.bind(phrase(folded))}`];
    where.push(...conditions({ ...filter, search: undefined, afterId: undefined, limit: undefined }, SQLITE, b));
    if (filter.afterId !== undefined) where.push(`s.rowid > ${b.bind(filter.afterId)}`);
    if (afterCursor !== undefined) where.push(`s.rowid ${descending ? '<' : '>'} ${b.bind(afterCursor)}`);
    const limit = filter.limit === undefined ? '' : ` LIMIT ${b.bind(filter.limit)}`;
    const text =
      `SELECT users.* FROM users_search AS s JOIN users ON users.id = s.rowid WHERE ${where.join(' AND ')}` +
      ` ORDER BY s.rowid ${descending ? 'DESC' : 'ASC'}${limit}`;
    return this.#statement(text)
      .all(...b.values)
      .map(toUser);
  }

  #descendingGroups(filter: ListFilter, field: SortField, after: ListOrder['after'], dialect: Dialect): User[] {
    const limit = filter.limit ?? Number.POSITIVE_INFINITY;
    const base = { ...filter, limit: undefined };
    const column = COLUMN[field];
    const users: User[] = [];
    const group = (value: unknown, afterId: number) => {
      const b = new Binder(dialect);
      const where = [...conditions(base, dialect, b), `${column} = ${b.bind(value)}`, `id > ${b.bind(afterId)}`];
      const cap = Number.isFinite(limit) ? ` LIMIT ${b.bind(limit - users.length)}` : '';
      const text = `SELECT * FROM users WHERE ${where.join(' AND ')} ORDER BY id${cap}`;
      for (const row of this.#statement(text).all(...b.values)) users.push(toUser(row));
    };
    let value: unknown = after?.values[0];
    if (after !== undefined) group(value, after.id);
    while (users.length < limit) {
      const b = new Binder(dialect);
      const where = conditions(base, dialect, b);
      if (value !== undefined) where.push(`${column} < ${b.bind(value)}`);
      const clause = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
      const next = this.#statement(`SELECT ${column} AS value FROM users${clause} ORDER BY ${column} DESC LIMIT 1`).get(
        ...b.values,
      ) as unknown as { value: unknown } | undefined;
      if (next === undefined) break;
      value = next.value;
      group(value, 0);
    }
    return users;
  }

  /**
   * Whether this connection has prepared STATEMENTS_KEPT listing statements: a reader thread then
   * ends (and another starts). The main thread's connection reads only plain pages (a few
   * statements), or, for `:memory:`, every listing (its statements grow with the distinct listings asked).
   */
  get crowded(): boolean {
    return this.#lists.size >= STATEMENTS_KEPT;
  }

  /** A listing statement, prepared once per connection. */
  #statement(text: string): Statement<unknown[], UserRow> {
    this.#checkpoint?.();
    let statement = this.#lists.get(text);
    if (statement === undefined) {
      statement = this.#db.prepare(text);
      this.#lists.set(text, statement);
    }
    return statement;
  }

  /** The read steps of a program (a replay's look-up). */
  exec(step: Step): unknown {
    switch (step.op) {
      case 'get':
      case 'lock':
        return this.get(step.id);
      case 'findKey':
        return this.findKey(step.key);
      case 'hookRow':
        return this.hook(step.url);
      case 'history':
        return this.changes(0, 0).history;
      default:
        throw new Error(`${step.op} is a write step`);
    }
  }
}

/** The statements that write, prepared once on the writer's connection. */
export class WriteStatements {
  readonly reads: ReadStatements;
  readonly #insert: Statement<unknown[], UserRow>;
  readonly #update: Statement<unknown[], UserRow>;
  readonly #delete: Statement<[number]>;
  readonly #insertKey: Statement<[string, string, number, string | null, number]>;
  readonly #dropExpiredKeys: Statement<[number]>;
  readonly #dropExpiredKey: Statement<[string, number]>;
  readonly setVersion: Statement<[number]>;
  readonly #logChange: Statement<unknown[]>;
  readonly #hookCreate: Statement<[string]>;
  readonly #hookLease: Statement<[string, number, number | null, string]>;
  readonly #hookFail: Statement<[string, number, number, string, number]>;
  readonly #hookRelease: Statement<[string, string]>;
  readonly #firstKept: Statement<[number], number>;
  readonly #lowestCursor: Statement<[], number | null>;
  readonly #prune: Statement<[number]>;
  readonly #setFloor: Statement<[number]>;
  readonly #lastId: Statement<[], number | undefined>;

  constructor(db: Database.Database) {
    this.reads = new ReadStatements(db);
    this.#logChange = db.prepare(
      `INSERT INTO changes (${[...CHANGE_COLUMNS, ...BEFORE_COLUMNS].join(', ')})
       VALUES (${placeholders(CHANGE_COLUMNS.length + BEFORE_COLUMNS.length)})`,
    );
    this.#hookCreate = db.prepare(
      'INSERT INTO webhook_cursors (url, version) SELECT ?, version FROM store_version WHERE true ON CONFLICT DO NOTHING',
    );
    this.#hookLease = db.prepare(
      'UPDATE webhook_cursors SET owner = ?, lease_until = ?, version = coalesce(?, version) WHERE url = ?',
    );
    this.#hookFail = db.prepare(
      `INSERT INTO webhook_failures (url, version, attempts, reason, failed_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT DO NOTHING`,
    );
    this.#hookRelease = db.prepare('UPDATE webhook_cursors SET lease_until = 0 WHERE url = ? AND owner = ?');
    this.#firstKept = db
      .prepare<[number], number>('SELECT version FROM changes WHERE at >= ? ORDER BY version LIMIT 1')
      .pluck();
    this.#lowestCursor = db.prepare<[], number | null>('SELECT min(version) FROM webhook_cursors').pluck();
    this.#prune = db.prepare('DELETE FROM changes WHERE version <= ?');
    this.#setFloor = db.prepare('UPDATE store_version SET changes_floor = max(changes_floor, ?)');
    this.#insert = db.prepare(
      `INSERT INTO users (${WRITTEN_COLUMNS.join(', ')}, created_at, updated_at)
       VALUES (${placeholders(WRITTEN_COLUMNS.length + 2)}) RETURNING *`,
    );
    // Never before its creation, though the clock went back (or a restore set a later createdAt):
    // a backup refuses a record changed before it was created.
    this.#update = db.prepare(
      `UPDATE users SET ${WRITTEN_COLUMNS.map((column) => `${column} = ?`).join(', ')},
       updated_at = max(?, created_at), version = version + 1 WHERE id = ? RETURNING *`,
    );
    this.#lastId = db.prepare<[], number | undefined>(`SELECT seq FROM sqlite_sequence WHERE name = 'users'`).pluck();
    this.#delete = db.prepare('DELETE FROM users WHERE id = ?');
    this.#insertKey = db.prepare(
      'INSERT INTO idempotency_keys (key, fingerprint, user_id, batch_ids, created_at) VALUES (?, ?, ?, ?, ?)',
    );
    this.#dropExpiredKeys = db.prepare('DELETE FROM idempotency_keys WHERE created_at <= ?');
    this.#dropExpiredKey = db.prepare('DELETE FROM idempotency_keys WHERE key = ? AND created_at <= ?');
    this.setVersion = db.prepare('UPDATE store_version SET version = ?');
  }

  /** Adds one change to the log, in the transaction that made it. */
  logChange(change: Change): void {
    const { version, kind, user, at, before } = change;
    this.#logChange.run(
      version,
      kind,
      user.id,
      ...RECORD_FIELDS.map((field) => user[field]),
      user.createdAt.getTime(),
      user.updatedAt.getTime(),
      user.version,
      at.getTime(),
      ...beforeValues(before, (date) => date.getTime()),
    );
  }

  /**
   * Drops the changes older than `retentionMs` that every webhook URL has been given, and raises
   * the log's floor past them. `version` is the change version inside this transaction.
   */
  pruneChanges(retentionMs: number, version: number): void {
    const firstKept = (this.#firstKept.get(Date.now() - retentionMs) as number | undefined) ?? version + 1;
    const cursor = this.#lowestCursor.get() as number | null;
    const last = Math.min(firstKept - 1, cursor ?? Number.POSITIVE_INFINITY);
    const { floor } = this.reads.changes(0, 0);
    if (last <= floor) return;
    this.#prune.run(last);
    this.#setFloor.run(last);
  }

  /** Runs one step of a write program; SQLite needs no row locks (the writer holds the file's). */
  exec(step: Step): unknown {
    switch (step.op) {
      case 'get':
      case 'lock':
      case 'findKey':
      case 'hookRow':
      case 'history':
        return this.reads.exec(step);
      case 'hookCreate':
        this.#hookCreate.run(step.url);
        return undefined;
      case 'hookLease':
        this.#hookLease.run(step.owner, Date.now() + step.leaseMs, step.version ?? null, step.url);
        return undefined;
      case 'hookFail':
        this.#hookFail.run(step.url, step.version, step.attempts, step.reason, Date.now());
        return undefined;
      case 'hookRelease':
        this.#hookRelease.run(step.url, step.owner);
        return undefined;
      case 'insert': {
        const now = Date.now();
        return toUser(this.#insert.get(...writtenValues(step.input), now, now) as UserRow);
      }
      case 'insertMany': {
        const now = Date.now();
        return step.inputs.map((input) => toUser(this.#insert.get(...writtenValues(input), now, now) as UserRow));
      }
      case 'update':
        return toUser(this.#update.get(...writtenValues(step.input), Date.now(), step.id) as UserRow);
      case 'lastId':
        return this.#lastId.get() ?? 0;
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
        this.#insertKey.run(step.key, step.fingerprint, step.userId, batchIds(step.batch), Date.now());
        return undefined;
    }
  }
}
