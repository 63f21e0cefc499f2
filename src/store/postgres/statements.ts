import type { Pool, PoolClient, QueryConfig } from 'pg';
import { FIELDS, RECORD_FIELDS } from '../../record/fields.ts';
import {
  BEFORE_COLUMNS,
  beforeOf,
  beforeValues,
  CHANGE_COLUMNS,
  USER_COLUMNS,
  userReader,
  type UserRow,
  WRITTEN_COLUMNS,
  writtenValues,
} from '../columns.ts';
import { type Change, type ChangeKind, IDEMPOTENCY_KEY_TTL_MS } from '../store.ts';
import { batchIds, keyRow } from '../keys.ts';
import type { HookRow, Step } from '../write-rules.ts';

/** A users row as node-postgres returns it (BIGINT ids as strings, TIMESTAMPTZ as Date) as a User. */
export const toUser = userReader({ id: Number, time: (value) => value as Date });

export const COLUMNS = USER_COLUMNS.join(', ');

/** The PostgreSQL type of each of the record's own columns, in order. */
export const RECORD_TYPES: readonly string[] = RECORD_FIELDS.map((field) => {
  const spec = FIELDS[field];
  return spec.kind === 'text' ? 'text' : spec.pgType;
});

/** `$1, $2, ...`: n placeholders. */
const params = (n: number) => Array.from({ length: n }, (_, i) => `$${i + 1}`).join(', ');

const INSERT = `INSERT INTO users (${WRITTEN_COLUMNS.join(', ')}) VALUES (${params(WRITTEN_COLUMNS.length)}) RETURNING ${COLUMNS}`;
/** The types of WRITTEN_COLUMNS: the record's own, then the folded copies (text). */
const WRITTEN_TYPES = [...RECORD_TYPES, ...WRITTEN_COLUMNS.slice(RECORD_TYPES.length).map(() => 'text')];
const INSERT_MANY = `INSERT INTO users (${WRITTEN_COLUMNS.join(', ')})
  SELECT ${WRITTEN_COLUMNS.map((_, i) => `c${i}`).join(', ')}
  FROM unnest(${WRITTEN_TYPES.map((type, i) => `$${i + 1}::${type}[]`).join(', ')})
    WITH ORDINALITY AS batch(${WRITTEN_COLUMNS.map((_, i) => `c${i}`).join(', ')}, n)
  ORDER BY n
  RETURNING ${COLUMNS}`;
const UPDATE = `UPDATE users SET ${WRITTEN_COLUMNS.map((column, i) => `${column} = $${i + 2}`).join(', ')},
               updated_at = greatest(date_trunc('milliseconds', now()), created_at), version = version + 1
               WHERE id = $1 RETURNING ${COLUMNS}`;

/** Keys younger than this are remembered, by the database's clock. */
const UNEXPIRED = `created_at > now() - ${IDEMPOTENCY_KEY_TTL_MS} * interval '1 millisecond'`;
const EXPIRED = `created_at <= now() - ${IDEMPOTENCY_KEY_TTL_MS} * interval '1 millisecond'`;

/** Each step of a write program as one prepared statement. */
function queryOf(step: Step): QueryConfig {
  switch (step.op) {
    case 'lock':
      return { name: 'users-lock', text: `SELECT ${COLUMNS} FROM users WHERE id = $1 FOR UPDATE`, values: [step.id] };
    case 'get':
      return { name: 'users-get', text: `SELECT ${COLUMNS} FROM users WHERE id = $1`, values: [step.id] };
    case 'insert':
      return { name: 'users-insert', text: INSERT, values: writtenValues(step.input) };
    case 'insertMany': {
      // One statement for the batch: a column array per written column.
      const rows = step.inputs.map(writtenValues);
      return {
        name: 'users-insert-many',
        text: INSERT_MANY,
        values: WRITTEN_COLUMNS.map((_, i) => rows.map((row) => row[i])),
      };
    }
    case 'update':
      return { name: 'users-update', text: UPDATE, values: [step.id, ...writtenValues(step.input)] };
    case 'delete':
      return { name: 'users-delete', text: 'DELETE FROM users WHERE id = $1', values: [step.id] };
    case 'findKey':
      return {
        name: 'idempotency-find',
        text: `SELECT fingerprint, user_id, batch_ids FROM idempotency_keys WHERE key = $1 AND ${UNEXPIRED}`,
        values: [step.key],
      };
    case 'pruneKeys':
      return { name: 'idempotency-prune', text: `DELETE FROM idempotency_keys WHERE ${EXPIRED}` };
    case 'dropExpiredKey':
      return {
        name: 'idempotency-drop-expired',
        text: `DELETE FROM idempotency_keys WHERE key = $1 AND ${EXPIRED}`,
        values: [step.key],
      };
    case 'rememberKey':
      return {
        name: 'idempotency-insert',
        text: 'INSERT INTO idempotency_keys (key, fingerprint, user_id, batch_ids) VALUES ($1, $2, $3, $4)',
        values: [step.key, step.fingerprint, step.userId, batchIds(step.batch)],
      };
    case 'hookRow':
      return {
        name: 'hook-row',
        text: 'SELECT version, owner, lease_until > now() AS lease_live FROM webhook_cursors WHERE url = $1',
        values: [step.url],
      };
    case 'lastId':
      // The sequence is not rolled back with a transaction: the next id is the one after its value.
      return {
        name: 'users-last-id',
        text: `SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('users', 'id')::regclass), 0) AS last`,
      };
    case 'history':
      return { name: 'changes-history', text: 'SELECT changes_history FROM store_version' };
    case 'hookCreate':
      return {
        name: 'hook-create',
        text: 'INSERT INTO webhook_cursors (url, version) SELECT $1, version FROM store_version ON CONFLICT DO NOTHING',
        values: [step.url],
      };
    case 'hookLease':
      return {
        name: 'hook-lease',
        text: `UPDATE webhook_cursors SET owner = $1, lease_until = now() + $2 * interval '1 millisecond',
               version = coalesce($3, version) WHERE url = $4`,
        values: [step.owner, step.leaseMs, step.version ?? null, step.url],
      };
    case 'hookFail':
      return {
        name: 'hook-fail',
        text: `INSERT INTO webhook_failures (url, version, attempts, reason) VALUES ($1, $2, $3, $4)
               ON CONFLICT DO NOTHING`,
        values: [step.url, step.version, step.attempts, step.reason],
      };
    case 'hookRelease':
      return {
        name: 'hook-release',
        text: `UPDATE webhook_cursors SET lease_until = '-infinity' WHERE url = $1 AND owner = $2`,
        values: [step.url, step.owner],
      };
  }
}

/** A change log row as node-postgres returns it. */
export type ChangeRow = UserRow & {
  version: string;
  kind: ChangeKind;
  record_version: number;
  at: Date;
};

export function toChange(row: ChangeRow): Change {
  const user = toUser({ ...row, version: row.record_version });
  const change: Change = { version: Number(row.version), kind: row.kind, user, at: row.at };
  const before = row.kind === 'updated' ? beforeOf(row, user, (value) => value as Date) : undefined;
  if (before !== undefined) change.before = before;
  return change;
}

/** The PostgreSQL types of CHANGE_COLUMNS, in order. */
const CHANGE_TYPES = [
  'bigint',
  'text',
  'bigint',
  ...RECORD_TYPES,
  'timestamptz',
  'timestamptz',
  'integer',
  'timestamptz',
  // BEFORE_COLUMNS: the record's own columns, then its updatedAt.
  ...RECORD_TYPES,
  'timestamptz',
];
const LOG_CHANGES = `INSERT INTO changes (${[...CHANGE_COLUMNS, ...BEFORE_COLUMNS].join(', ')})
           SELECT * FROM unnest(${CHANGE_TYPES.map((type, i) => `$${i + 1}::${type}[]`).join(', ')})`;

/** Adds a transaction's changes to the log, in one statement. */
export function logChanges(changes: readonly Change[]): QueryConfig {
  const column = <T>(pick: (change: Change) => T) => changes.map(pick);
  const befores = changes.map((c) => beforeValues(c.before, (date) => date));
  return {
    name: 'changes-log',
    text: LOG_CHANGES,
    values: [
      column((c) => c.version),
      column((c) => c.kind),
      column((c) => c.user.id),
      ...RECORD_FIELDS.map((field) => column((c) => c.user[field])),
      column((c) => c.user.createdAt),
      column((c) => c.user.updatedAt),
      column((c) => c.user.version),
      column((c) => c.at),
      ...BEFORE_COLUMNS.map((_, i) => befores.map((values) => values[i])),
    ],
  };
}

/**
 * Drops the changes older than the retention that every webhook URL has been given, and raises the
 * floor past them (inside a write transaction, which holds store_version).
 */
export function pruneChanges(retentionMs: number): QueryConfig {
  return {
    name: 'changes-prune',
    text: `WITH last AS (
             SELECT least(
               coalesce((SELECT version FROM changes WHERE at >= now() - $1 * interval '1 millisecond'
                         ORDER BY version LIMIT 1) - 1, (SELECT version FROM store_version)),
               coalesce((SELECT min(version) FROM webhook_cursors), 9223372036854775807)
             ) AS version
           ), pruned AS (
             DELETE FROM changes WHERE version <= (SELECT version FROM last)
           )
           UPDATE store_version SET changes_floor = greatest(changes_floor, (SELECT version FROM last))`,
    values: [retentionMs],
  };
}

/** Runs one step of a program on a connection (the batch's) or the pool (a read). */
export async function execStep(db: Pool | PoolClient, step: Step): Promise<unknown> {
  const { rows } = await db.query(queryOf(step));
  switch (step.op) {
    case 'lock':
    case 'get':
    case 'insert':
    case 'update':
      return rows[0] === undefined ? undefined : toUser(rows[0] as UserRow);
    case 'insertMany':
      // Ids come from the sequence in the order the rows were inserted, which is the inputs' order.
      return (rows as UserRow[]).map(toUser).sort((a, b) => a.id - b.id);
    case 'hookRow': {
      const row = rows[0] as { version: string; owner: string | null; lease_live: boolean } | undefined;
      return row === undefined
        ? undefined
        : ({ version: Number(row.version), owner: row.owner, leaseLive: row.lease_live } satisfies HookRow);
    }
    case 'history':
      return (rows[0] as { changes_history: string }).changes_history;
    case 'lastId':
      return Number((rows[0] as { last: string }).last);
    case 'findKey': {
      const row = rows[0] as { fingerprint: string; user_id: string; batch_ids: string | null } | undefined;
      return row === undefined ? undefined : keyRow(row);
    }
    default:
      return undefined;
  }
}

export type { UserRow };
