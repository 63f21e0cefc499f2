import {
  type GroupField,
  type IntegerFieldName,
  RANGE_FIELDS,
  type RangeField,
  RECORD_FIELDS,
  type RecordValues,
  SORT_FIELDS,
  type SortField,
  type User,
} from '../record/fields.ts';
import { fingerprint } from './fingerprint.ts';

/** What a create takes and a full replace sets: the record's own values (record/fields.ts). */
export type UserInput = RecordValues;
export type { GroupField, RangeField, SortField, User };
export { RANGE_FIELDS, SORT_FIELDS };

export const RANGE_OPS = ['gt', 'gte', 'lt', 'lte'] as const;
export type RangeOp = (typeof RANGE_OPS)[number];

/** One bound: `age.gte=30` is `{ field: 'age', op: 'gte', value: 30 }`; times in ms since the epoch. */
export interface Range {
  field: RangeField;
  op: RangeOp;
  value: number;
}

/** Exact values of the record's own fields, ranges, a search and a page. */
export interface ListFilter extends Partial<RecordValues> {
  ranges?: readonly Range[];
  /** Records whose searched fields (SEARCH_FIELDS) contain this text, compared folded (`fold`). */
  search?: string;
  /** Only ids greater than this one (pages in creation order). */
  afterId?: number;
  /** At most this many records. */
  limit?: number;
}

/** Whether the filter picks records by more than the page it asks for (afterId and limit). */
export function narrows(filter: ListFilter): boolean {
  return (
    filter.ranges !== undefined ||
    filter.search !== undefined ||
    RECORD_FIELDS.some((field) => filter[field] !== undefined)
  );
}

export interface SortKey {
  field: SortField;
  descending: boolean;
}

/**
 * A listing's order other than creation order: its sort keys (ties broken by id ascending), and,
 * for the next page, the position of the last record of the one before (its sort values and id).
 */
export interface ListOrder {
  sort: readonly SortKey[];
  after?: { values: ReadonlyArray<string | number>; id: number };
}

/** The least, the greatest and the sum of a whole-number field over a group's records. */
export interface Summary {
  min: number;
  max: number;
  sum: number;
}

/** One group of a `stats` answer: its value (none for the total), how many records, a summary of each whole-number field. */
export interface GroupStats {
  value?: string | number;
  count: number;
  /** For each of INTEGER_FIELDS; absent when the group has no records (a total of nothing). */
  summaries: Partial<Record<IntegerFieldName, Summary>>;
}

/**
 * The groups `stats` answers, most records first (ties by value: text by code point, numbers
 * ascending), at most the limit asked; `total` is how many groups there are in all.
 */
export interface Stats {
  groups: GroupStats[];
  total: number;
}

/**
 * What a conditional write requires of the record, as data (so it can cross to a writer thread):
 * any stored version (`If-Match: *`), or the content one of these fingerprints (fingerprint.ts)
 * names. It is checked against the current record inside the write, so a concurrent change cannot
 * slip by.
 */
export type Precondition = { anyVersion: true } | { fingerprints: readonly string[] };

/**
 * The largest id, and event id (change version), the API's parameters take: 15 digits. The service
 * creates and changes nothing past it (write-rules.ts), and a restore accepts up to it.
 */
export const MAX_ID = 999_999_999_999_999;

/** The largest record version both stores hold (PostgreSQL's users.version is an INTEGER). */
export const MAX_RECORD_VERSION = 2_147_483_647;

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
 * record it created as it is now (`replayed`); or a refusal when the key came with other input, or
 * when the record it created has since been deleted (nothing of a deleted record is kept).
 */
export type CreateResult =
  { ok: true; user: User; replayed: boolean } | { ok: false; reason: 'key-reused' | 'record-deleted' };

/** A batch create: every record stored, in order, or a refusal of its key (as CreateResult). */
export type BatchCreateResult =
  { ok: true; users: User[]; replayed: boolean } | { ok: false; reason: 'key-reused' | 'record-deleted' };

export type ChangeKind = 'created' | 'updated' | 'deleted';

/**
 * One committed change to one record. `version` is the database's change version it produced:
 * every change raises it by one, in commit order, on every instance. For a deletion, `user` is the
 * record as it was.
 */
export interface Change {
  version: number;
  kind: ChangeKind;
  user: User;
  /**
   * For an update, the record as it was just before it (a filtered stream tells a record that
   * left its view by it); undefined for a creation or a deletion, and for an update logged before
   * the log kept it (schema version 10).
   */
  before?: User;
  /** When it was committed. */
  at: Date;
}

/** One committed transaction of this store: its changes in version order (none for a replay or a refusal). */
export interface Commit {
  changes: Change[];
}

/** A page of the change log: the changes after a version, in version order, and where the log stands. */
export interface ChangeLogPage {
  /** The oldest version a reader may resume after: the log holds every change above it. */
  floor: number;
  /** The database's change version when the page was read. */
  version: number;
  /** Which history the versions count in: a restore starts a new one, whose versions may repeat the old. */
  history: string;
  changes: Change[];
}

/** A webhook URL's position for the process that holds its lease: the last version it took, in which history. */
export interface HookCursor {
  version: number;
  history: string;
}

/** A change a webhook URL never took, given up on after its retries. */
export interface HookFailure {
  version: number;
  attempts: number;
  reason: string;
}

/** How long the change log keeps a change unless a setting says otherwise. */
export const DEFAULT_CHANGES_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * Everything the routes need from storage. Each write is durable when its promise resolves.
 * Implementations: SQLite (`sqlite/`) and PostgreSQL (`postgres/`), sharing their write rules
 * (`write-rules.ts`).
 */
export interface UserStore {
  /** Records in creation (id) order, or in `order`. */
  list(filter: ListFilter, order?: ListOrder): Promise<User[]>;
  get(id: number): Promise<User | undefined>;
  create(input: UserInput): Promise<User>;
  /**
   * Creates a record unless the key is remembered: then nothing is stored and the record it
   * created is returned (same fingerprint), or the key is refused (another fingerprint, or that
   * record was deleted). The key is stored in the record's transaction and remembered for
   * IDEMPOTENCY_KEY_TTL_MS; it keeps the record's id, never its values.
   */
  createOnce(input: UserInput, idempotency: IdempotencyKey): Promise<CreateResult>;
  /**
   * Creates every record in one transaction, all or none, ids in the inputs' order, one change
   * each. With a key, as createOnce: a retry with the same fingerprint gets the same records back.
   */
  createMany(inputs: UserInput[], idempotency?: IdempotencyKey): Promise<BatchCreateResult>;
  /** Changes the given fields (all three for a full replace). */
  update(id: number, changes: Partial<UserInput>, precondition?: Precondition): Promise<WriteResult>;
  remove(id: number, precondition?: Precondition): Promise<WriteResult>;
  /**
   * The database's change version: it grows by one with every committed change, whichever
   * process made it, so equal versions mean equal data.
   */
  version(): Promise<number>;
  /**
   * The change version and the history it counts in: a restore starts another history, and may
   * set the version back, so a copy kept at a version is current only in the same history.
   */
  position(): Promise<{ version: number; history: string }>;
  /** Called after each commit of this store's own writes, in commit order. */
  onCommit(listener: (commit: Commit) => void): void;
  /** At most `limit` changes after version `after`, from the change log, with its floor and the version now. */
  changes(after: number, limit: number): Promise<ChangeLogPage>;
  /**
   * Calls `wake` when another process may have committed (this store's own commits are told
   * through onCommit); answers what stops it.
   */
  watch(wake: () => void): () => void;
  /**
   * Takes or renews the lease on delivering to a webhook URL for `leaseMs`, and answers the URL's
   * cursor (the last version delivered, and the history it counts in); undefined while another
   * owner holds a live lease. A URL seen for the first time starts at the change version of that
   * moment.
   */
  claimHook(url: string, owner: string, leaseMs: number): Promise<HookCursor | undefined>;
  /**
   * Moves the cursor of a URL this owner holds, renews the lease and keeps the failures; false,
   * and nothing written, once the lease is lost or the history is no longer the cursor's (a restore).
   */
  advanceHook(
    url: string,
    owner: string,
    cursor: HookCursor,
    leaseMs: number,
    failures: HookFailure[],
  ): Promise<boolean>;
  /** Lets the lease go, so another process may deliver at once. */
  releaseHook(url: string, owner: string): Promise<void>;
  /** How many records match the filter (all of them without one); `afterId` and `limit` are not counted. */
  count(filter?: ListFilter): Promise<number>;
  /**
   * The records that match the filter (`afterId` and `limit` not counted), counted and summarized
   * by the value of `group` (one group of them all without it): at most `limit` groups.
   */
  stats(filter: ListFilter, group: GroupField | undefined, limit: number): Promise<Stats>;
  /** Resolves when the database answers and can take writes; rejects with the reason otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** The database cannot serve the request now (busy, unreachable, out of space): worth a retry. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}

/** Too many listings already wait for the threads that read them: refused at once, worth a retry. */
export class StoreBusyError extends StoreUnavailableError {
  override name = 'StoreBusyError';
}

/** A listing was not read within the database time limit (waiting included) and was given up. */
export class StoreTimeoutError extends StoreUnavailableError {
  override name = 'StoreTimeoutError';
}

/**
 * A write given up before it ran: it was not taken within DATABASE_TIMEOUT_MS of being asked (another
 * process held the write lock, say). Unlike other faults of a write, its outcome is known: not stored.
 */
export class StoreGaveUpError extends StoreUnavailableError {
  override name = 'StoreGaveUpError';
}

/** A write would take an id, a change version or a record's version past its end (write-rules.ts). */
export class StoreAtEndError extends Error {
  override name = 'StoreAtEndError';
}

/** Whether a precondition admits the record as it is now. */
export function preconditionHolds(precondition: Precondition | undefined, current: User): boolean {
  return (
    precondition === undefined ||
    'anyVersion' in precondition ||
    precondition.fingerprints.includes(fingerprint(current))
  );
}

/**
 * The database cannot be opened or used at all (a path that cannot hold it, a file that is not
 * writable, damaged or written by a newer version): the message names the path or setting and the
 * cause in one line, for the operator.
 */
export class StoreOpenError extends Error {
  override name = 'StoreOpenError';
}

// eslint-disable-next-line no-control-regex -- every ASCII character, controls too
const ASCII = /^[\x00-\x7f]*$/;

/**
 * Text as search compares it: Unicode-composed (NFC) and case-folded (lower, upper, lower again, so
 * that ß, ẞ and SS all fold to ss, and σ, ς and Σ to σ). The fields `q` searches are kept folded
 * beside themselves; a search folds its text the same way.
 */
export function fold(text: string): string {
  // ASCII needs none of what follows: the same answer, without the work (an import folds every record).
  if (ASCII.test(text)) return text.toLowerCase();
  // Lower, upper, lower again: the simple mappings plus the expansions (ß and ẞ to ss). Two letters
  // need more: a dotless ı keeps its own folding (it is not an i), and a final ς folds to σ, as
  // toLowerCase gives ς for a Σ at the end of a word.
  return text
    .normalize('NFC')
    .split('ı')
    .map((part) => part.toLowerCase().toUpperCase().toLowerCase())
    .join('ı')
    .replaceAll('ς', 'σ');
}

/** The value of a sort field in a user, as a listing compares it (times in ms). */
export function sortValue(user: User, field: SortField): string | number {
  const value = user[field];
  return value instanceof Date ? value.getTime() : value;
}
