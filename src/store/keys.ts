import type { StoredKey } from './bulk.ts';
import type { KeyRow } from './write-rules.ts';

/**
 * A remembered Idempotency-Key as the databases keep it (a row of idempotency_keys) and as a backup
 * carries it: the same for both dialects.
 */

/** A key's batch as both databases keep it: the ids as a JSON array, or NULL for a single create. */
export function batchIds(batch: readonly number[] | undefined): string | null {
  return batch === undefined ? null : JSON.stringify(batch);
}

/** A key as read from either database (PostgreSQL gives a BIGINT as a string). */
export function keyRow(row: { fingerprint: string; user_id: number | string; batch_ids: string | null }): KeyRow {
  const key: KeyRow = { fingerprint: row.fingerprint, userId: Number(row.user_id) };
  if (row.batch_ids !== null) key.batch = JSON.parse(row.batch_ids) as number[];
  return key;
}

/** A key as a backup carries it. */
export function storedKey(key: string, row: KeyRow, createdAt: number): StoredKey {
  const stored: StoredKey = { key, fingerprint: row.fingerprint, userId: row.userId, createdAt };
  if (row.batch !== undefined) stored.batch = row.batch;
  return stored;
}
