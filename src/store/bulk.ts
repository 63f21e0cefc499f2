import type { RecordValues } from '../record/fields.ts';
import { type ListFilter, type ListOrder, MAX_ID, StoreAtEndError, type User, type UserInput } from './store.ts';

/**
 * What the operator's commands need from storage, beside the service's store: whole-table work in
 * one transaction (imports, restores), consistent snapshots (exports, backups), the schema and an
 * integrity check. Opened by a Database's openBulk (database.ts): one connection of its own, the
 * schema brought up to date.
 */

/** A record with everything a backup keeps; times in ms since the epoch. */
export interface StoredRecord extends RecordValues {
  id: number;
  createdAt: number;
  updatedAt: number;
  version: number;
}

/**
 * Refuses, before they are stored, more new records than the ends the service keeps leave room for
 * (write-rules.ts): each takes an id and raises the change version by one. `at` is the database's
 * change version and last id when the import began, `count` the records it holds with these.
 */
export function checkImportRoom(at: { version: number; lastId: number }, count: number): void {
  const room = MAX_ID - Math.max(at.version, at.lastId);
  if (count > room) {
    throw new StoreAtEndError(
      `the database has room for ${room} more records (its change version is ${at.version} and its last id ${at.lastId}, of at most ${MAX_ID})`,
    );
  }
}

/** A remembered Idempotency-Key; `createdAt` in ms since the epoch. */
export interface StoredKey {
  key: string;
  fingerprint: string;
  userId: number;
  createdAt: number;
  /** Every record of a batch create, in order (the first is userId); absent for a single create. */
  batch?: number[];
}

/**
 * The steps of an import's or a restore's commit, named as each starts so that the command can
 * show it: on SQLite each is one long synchronous call (a million records: seconds).
 */
export type CommitStep =
  'storing' | 'logging changes' | 'building indexes' | 'filling the search index' | 'syncing to disk';

/** New records in one transaction: nothing of them is visible, or kept, until `commit`. */
export interface Importer {
  /** Stores these records next, ids given in this order. */
  add(rows: readonly UserInput[]): Promise<void>;
  /** Commits (durably) and raises the change version by one per record; answers the first and last id. */
  commit(onStep?: (step: CommitStep) => void): Promise<{ firstId: number | undefined; lastId: number | undefined }>;
  abort(): Promise<void>;
}

/** A read-only view of the database at one moment, while others go on writing. */
export interface Snapshot {
  /** The change version the snapshot shows. */
  readonly version: number;
  /** The highest id ever given (deleted ones too): new ids continue after it. */
  readonly lastId: number;
  /** As UserStore.list, inside the snapshot. */
  list(filter: ListFilter, order?: ListOrder): Promise<User[]>;
  count(): Promise<number>;
  records(): AsyncGenerator<StoredRecord[]>;
  keys(): AsyncGenerator<StoredKey[]>;
  end(): Promise<void>;
}

/** A whole database put back in one transaction: ids, versions, times, keys and the change version. */
export interface Restorer {
  addRecords(rows: readonly StoredRecord[]): Promise<void>;
  addKeys(rows: readonly StoredKey[]): Promise<void>;
  commit(state: { version: number; lastId: number }, onStep?: (step: CommitStep) => void): Promise<void>;
  abort(): Promise<void>;
}

export interface BulkStore {
  importer(): Promise<Importer>;
  snapshot(): Promise<Snapshot>;
  /** Refuses (RestoreRefused) a database that holds records, unless `replace`. */
  restorer(options: { replace: boolean }): Promise<Restorer>;
  /** The schema version applied (the newest migration). */
  schemaVersion(): Promise<number>;
  /** Integrity problems found; none: sound. Also counts the records and keys. */
  check(): Promise<{ problems: string[]; records: number; keys: number }>;
  close(): Promise<void>;
}

/** A restore into a database that holds records, without `replace`. */
export class RestoreRefused extends Error {
  override name = 'RestoreRefused';
}
