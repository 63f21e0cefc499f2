import type { Pool, PoolClient, QueryConfig } from 'pg';
import { type Change, type ChangeKind, fold, IDEMPOTENCY_KEY_TTL_MS, type User } from '../store.ts';
import type { HookRow, KeyRow, Step } from '../write-rules.ts';

/** A users row as node-postgres returns it: BIGINT ids as strings, TIMESTAMPTZ as Date. */
interface UserRow {
  id: string;
  name: string;
  age: number;
  city: string;
  created_at: Date;
  updated_at: Date;
  version: number;
}

export function toUser(row: UserRow): User {
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

export const COLUMNS = 'id, name, age, city, created_at, updated_at, version';

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
      return {
        name: 'users-insert',
        text: `INSERT INTO users (name, age, city, name_folded, city_folded) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
        values: [step.input.name, step.input.age, step.input.city, fold(step.input.name), fold(step.input.city)],
      };
    case 'update':
      return {
        name: 'users-update',
        text: `UPDATE users SET name = $2, age = $3, city = $4, name_folded = $5, city_folded = $6,
               updated_at = greatest(date_trunc('milliseconds', now()), created_at), version = version + 1
               WHERE id = $1 RETURNING ${COLUMNS}`,
        values: [
          step.id,
          step.input.name,
          step.input.age,
          step.input.city,
          fold(step.input.name),
          fold(step.input.city),
        ],
      };
    case 'delete':
      return { name: 'users-delete', text: 'DELETE FROM users WHERE id = $1', values: [step.id] };
    case 'findKey':
      return {
        name: 'idempotency-find',
        text: `SELECT fingerprint, user_id FROM idempotency_keys WHERE key = $1 AND ${UNEXPIRED}`,
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
        text: 'INSERT INTO idempotency_keys (key, fingerprint, user_id) VALUES ($1, $2, $3)',
        values: [step.key, step.fingerprint, step.userId],
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
export interface ChangeRow extends Omit<UserRow, 'version'> {
  version: string;
  kind: ChangeKind;
  record_version: number;
  at: Date;
}

export function toChange(row: ChangeRow): Change {
  return {
    version: Number(row.version),
    kind: row.kind,
    user: toUser({ ...row, version: row.record_version }),
    at: row.at,
  };
}

/** Adds a transaction's changes to the log, in one statement. */
export function logChanges(changes: readonly Change[]): QueryConfig {
  const column = <T>(pick: (change: Change) => T) => changes.map(pick);
  return {
    name: 'changes-log',
    text: `INSERT INTO changes (version, kind, id, name, age, city, created_at, updated_at, record_version, at)
           SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::smallint[], $6::text[],
             $7::timestamptz[], $8::timestamptz[], $9::integer[], $10::timestamptz[])`,
    values: [
      column((c) => c.version),
      column((c) => c.kind),
      column((c) => c.user.id),
      column((c) => c.user.name),
      column((c) => c.user.age),
      column((c) => c.user.city),
      column((c) => c.user.createdAt),
      column((c) => c.user.updatedAt),
      column((c) => c.user.version),
      column((c) => c.at),
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
      const row = rows[0] as { fingerprint: string; user_id: string } | undefined;
      return row === undefined
        ? undefined
        : ({ fingerprint: row.fingerprint, userId: Number(row.user_id) } satisfies KeyRow);
    }
    default:
      return undefined;
  }
}

export type { UserRow };
