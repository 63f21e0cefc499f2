import type { Change, CreateResult, User } from './store.ts';

/** Expired keys are deleted at most this often by each store, in the write of a keyed create. */
export const PRUNE_INTERVAL_MS = 60 * 60 * 1000;

/** A key's row as both stores read it. */
export interface KeyRow {
  fingerprint: string;
  user_json: string;
}

/** The created record as kept beside its key, so a replay shows it as first stored (dates as ISO text). */
export function snapshotOf(user: User): string {
  return JSON.stringify(user);
}

function fromSnapshot(json: string): User {
  const kept = JSON.parse(json) as Omit<User, 'createdAt' | 'updatedAt'> & { createdAt: string; updatedAt: string };
  return { ...kept, createdAt: new Date(kept.createdAt), updatedAt: new Date(kept.updatedAt) };
}

/** What a remembered key means for a request with this fingerprint. */
export function replayOf(row: KeyRow, fingerprint: string): CreateResult {
  if (row.fingerprint !== fingerprint) return { ok: false, reason: 'key-reused' };
  return { ok: true, user: fromSnapshot(row.user_json), replayed: true };
}

/** Only a new record is a change: a replay's snapshot may be stale and must not reach caches. */
export function createdChanges(result: CreateResult): Change[] {
  return result.ok && !result.replayed ? [{ kind: 'put', user: result.user }] : [];
}
