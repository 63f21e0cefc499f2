import type { Pool, PoolClient, QueryConfig } from 'pg';
import { fold, IDEMPOTENCY_KEY_TTL_MS, type User } from '../store.ts';
import type { KeyRow, Step } from '../write-rules.ts';

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
               updated_at = date_trunc('milliseconds', now()), version = version + 1 WHERE id = $1 RETURNING ${COLUMNS}`,
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
  }
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
