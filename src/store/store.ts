/** A stored user as the storage layer hands it over: typed, camelCase, independent of the API. */
export interface User {
  id: number;
  name: string;
  age: number;
  city: string;
  createdAt: Date;
  updatedAt: Date;
  /** Starts at 1 and grows by one on every change; the record's ETag comes from it. */
  version: number;
}

export interface UserInput {
  name: string;
  age: number;
  city: string;
}

export interface ListFilter {
  name?: string;
  age?: number;
  city?: string;
  /** Only ids greater than this one. */
  afterId?: number;
  /** At most this many records. */
  limit?: number;
}

/** Checked against the current record inside the write, so a concurrent change cannot slip by. */
export type Precondition = (current: User) => boolean;

export type WriteResult = { ok: true; user: User } | { ok: false; reason: 'not-found' | 'precondition-failed' };

/** An `Idempotency-Key` and the fingerprint (a hash) of the request input it came with. */
export interface IdempotencyKey {
  key: string;
  fingerprint: string;
}

/**
 * How long a key is remembered: a retry within a day replays, after that the key is free again.
 * Kept in the database, so restarts and other instances see the same keys.
 */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * A keyed create: the record just stored, or, for a key already used with the same fingerprint, the
 * record as it was first stored (`replayed`); or a refusal when the key came with other input.
 */
export type CreateResult = { ok: true; user: User; replayed: boolean } | { ok: false; reason: 'key-reused' };

/** What one write did to the stored records. */
export type Change = { kind: 'put'; user: User } | { kind: 'delete'; id: number };

/** One committed transaction: the database's change version it produced, and its changes in order. */
export interface Commit {
  version: number;
  changes: Change[];
}

/** The change a write's result stands for, if any. */
export function changeOf(result: User | WriteResult, removed = false): Change[] {
  if ('ok' in result) {
    if (!result.ok) return [];
    return removed ? [{ kind: 'delete', id: result.user.id }] : [{ kind: 'put', user: result.user }];
  }
  return [{ kind: 'put', user: result }];
}

/**
 * Everything the routes need from storage. Each write is durable when its promise resolves.
 * Implementations: SQLite now; PostgreSQL can slot in beside it without touching the routes.
 */
export interface UserStore {
  /** Records in creation (id) order. */
  list(filter: ListFilter): Promise<User[]>;
  get(id: number): Promise<User | undefined>;
  create(input: UserInput): Promise<User>;
  /**
   * Creates a record unless the key is remembered: then nothing is stored and the first record is
   * returned (same fingerprint) or the key is refused (another fingerprint). The key is stored in
   * the record's transaction and remembered for IDEMPOTENCY_KEY_TTL_MS.
   */
  createOnce(input: UserInput, idempotency: IdempotencyKey): Promise<CreateResult>;
  /** Changes the given fields (all three for a full replace). */
  update(id: number, changes: Partial<UserInput>, precondition?: Precondition): Promise<WriteResult>;
  remove(id: number, precondition?: Precondition): Promise<WriteResult>;
  /**
   * The database's change version: it grows with every committed write transaction, whichever
   * process made it, so equal versions mean equal data.
   */
  version(): Promise<number>;
  /** Called after each commit of this store's own writes, in commit order. */
  onCommit(listener: (commit: Commit) => void): void;
  /** Resolves when the database answers; rejects otherwise. */
  /** How many records are stored now. */
  count(): Promise<number>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** The database cannot serve the request now (busy, unreachable, out of space): worth a retry. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}
