import { RECORD_FIELDS, type RecordField } from '../record/fields.ts';
import {
  type BatchCreateResult,
  type ChangeKind,
  type CreateResult,
  type HookCursor,
  type HookFailure,
  type IdempotencyKey,
  MAX_ID,
  MAX_RECORD_VERSION,
  type Precondition,
  preconditionHolds,
  type User,
  type UserInput,
  type WriteResult,
} from './store.ts';

/**
 * The rules of every write, written once for both stores. A write is a program of steps, each one
 * statement that the dialect runs inside its transaction: SQLite runs a program synchronously on
 * its writer's connection, PostgreSQL awaits each step on the batch's connection. The rules (look
 * the record up, check the precondition, prune and check the idempotency key, then change) live
 * here; the dialects hold only SQL.
 */

/** What each step is given. */
interface StepArgs {
  /** The record, locked until the transaction ends. */
  lock: { id: number };
  /** The record, read without a lock (for a replay). */
  get: { id: number };
  insert: { input: UserInput };
  /** Inserts the records in order, in one statement where the dialect can (ids in the inputs' order). */
  insertMany: { inputs: readonly UserInput[] };
  /** Sets all three fields, raises the record's version and its updatedAt. */
  update: { id: number; input: UserInput };
  delete: { id: number };
  /** A remembered key younger than IDEMPOTENCY_KEY_TTL_MS. */
  findKey: { key: string };
  /** Deletes every key older than IDEMPOTENCY_KEY_TTL_MS (by the database's clock, as findKey). */
  pruneKeys: object;
  /** Deletes the key if it has expired, so a reused expired key can be stored again. */
  dropExpiredKey: { key: string };
  /** For a batch, `batch` lists every record it created (`userId` is the first). */
  rememberKey: { key: string; fingerprint: string; userId: number; batch?: readonly number[] };
  /** A webhook URL's cursor and lease. */
  hookRow: { url: string };
  /** A cursor for a new URL, at the change version now. */
  hookCreate: { url: string };
  /** Gives the lease to `owner` until `leaseMs` from now (by the database's clock), and moves the cursor if a version is given. */
  hookLease: { url: string; owner: string; leaseMs: number; version?: number };
  hookFail: { url: string } & HookFailure;
  hookRelease: { url: string; owner: string };
  /** The history the change versions count in now. */
  history: object;
  /** The highest id ever given (deleted ones too): the next create gets the one after it. */
  lastId: object;
}

/** A webhook URL's row: its cursor, and who holds a lease that has not run out. */
export interface HookRow {
  version: number;
  owner: string | null;
  leaseLive: boolean;
}

/** A remembered key: the fingerprint of the input it came with and the record (or records) it created. */
export interface KeyRow {
  fingerprint: string;
  userId: number;
  /** Every record a batch created, in order; absent for a single create. */
  batch?: number[];
}

/** What each step answers. */
export interface StepResults {
  lock: User | undefined;
  get: User | undefined;
  insert: User;
  insertMany: User[];
  update: User;
  delete: undefined;
  findKey: KeyRow | undefined;
  pruneKeys: undefined;
  dropExpiredKey: undefined;
  rememberKey: undefined;
  hookRow: HookRow | undefined;
  hookCreate: undefined;
  hookLease: undefined;
  hookFail: undefined;
  hookRelease: undefined;
  history: string;
  lastId: number;
}

export type StepName = keyof StepArgs;
export type Step = { [K in StepName]: { op: K } & StepArgs[K] }[StepName];

/** What a program ends with: its answer, and the changes it made, in order. */
export interface Outcome<T> {
  value: T;
  changes?: ReadonlyArray<{ kind: ChangeKind; user: User; before?: User }>;
}

export type Program<T> = Generator<Step, Outcome<T>, unknown>;

/** Runs one step and hands back its typed result. */
function* run<K extends StepName>(step: { op: K } & StepArgs[K]): Generator<Step, StepResults[K], unknown> {
  return (yield step as Step) as StepResults[K];
}

/** A write as data: what the routes ask for, and what crosses to a writer thread. */
export type WriteRequest =
  | { kind: 'create'; input: UserInput }
  | { kind: 'createOnce'; input: UserInput; key: IdempotencyKey }
  | { kind: 'createMany'; inputs: UserInput[]; key?: IdempotencyKey }
  | { kind: 'update'; id: number; changes: Partial<UserInput>; precondition?: Precondition }
  | { kind: 'remove'; id: number; precondition?: Precondition }
  | { kind: 'claimHook'; url: string; owner: string; leaseMs: number }
  | { kind: 'advanceHook'; url: string; owner: string; cursor: HookCursor; leaseMs: number; failures: HookFailure[] }
  | { kind: 'releaseHook'; url: string; owner: string };

/**
 * A write refused because it would take a number past the end the service keeps: an id or a change
 * version past MAX_ID (the 15 digits the API takes), or a record's version past MAX_RECORD_VERSION
 * (PostgreSQL's INTEGER). A restore accepts up to these same ends, so whatever the service holds it
 * can back up and restore; the store turns this value into a StoreAtEndError.
 */
export interface AtEnd {
  atEnd: string;
}

export function isAtEnd(value: unknown): value is AtEnd {
  return typeof value === 'object' && value !== null && 'atEnd' in value;
}

const atEnd = (detail: string): Outcome<AtEnd> => ({ value: { atEnd: detail } });
const CHANGES_AT_END = atEnd(
  `The database's change version is at its end (${MAX_ID}): it takes no more changes. Export, and import into a new database to start a new count (the records get new ids there; a restore keeps the count).`,
);
const IDS_AT_END = atEnd(`The last id is at its end (${MAX_ID}): no more records can be created in this database.`);

/** Refuses a create of `count` records when the last of them would pass MAX_ID. */
function* idLeft(count = 1): Generator<Step, Outcome<AtEnd> | undefined, unknown> {
  return (yield* run({ op: 'lastId' })) + count > MAX_ID ? IDS_AT_END : undefined;
}

const NOT_FOUND = { ok: false, reason: 'not-found' } as const;
const PRECONDITION_FAILED = { ok: false, reason: 'precondition-failed' } as const;

/** Expired keys are deleted at most this often by each writer, in the write of a keyed create. */
export const PRUNE_INTERVAL_MS = 60 * 60 * 1000;

function* create(input: UserInput): Program<User | AtEnd> {
  const full = yield* idLeft();
  if (full !== undefined) return full;
  const user = yield* run({ op: 'insert', input });
  return { value: user, changes: [{ kind: 'created', user }] };
}

/** What a remembered key means for a request with this fingerprint; a read, so it runs anywhere. */
export function* remembered(key: IdempotencyKey): Generator<Step, CreateResult | undefined, unknown> {
  const known = yield* rememberedBatch(key);
  if (known === undefined || !known.ok) return known;
  const [user] = known.users;
  return { ok: true, user: user as User, replayed: true };
}

/** The same for a batch: every record it created, as they are now (a refusal if any was deleted). */
export function* rememberedBatch(key: IdempotencyKey): Generator<Step, BatchCreateResult | undefined, unknown> {
  const row = yield* run({ op: 'findKey', key: key.key });
  if (row === undefined) return undefined;
  if (row.fingerprint !== key.fingerprint) return { ok: false, reason: 'key-reused' };
  const users: User[] = [];
  for (const id of row.batch ?? [row.userId]) {
    const user = yield* run({ op: 'get', id });
    if (user === undefined) return { ok: false, reason: 'record-deleted' };
    users.push(user);
  }
  return { ok: true, users, replayed: true };
}

function* createOnce(
  input: UserInput,
  key: IdempotencyKey,
  prune: boolean,
  changesLeft: boolean,
): Program<CreateResult | AtEnd> {
  // Checked again inside the write: writes take turns, so a concurrent twin has either committed
  // its key or is earlier in this very transaction, and is seen here.
  const known = yield* remembered(key);
  if (known !== undefined) return { value: known };
  if (!changesLeft) return CHANGES_AT_END;
  const full = yield* idLeft();
  if (full !== undefined) return full;
  if (prune) yield* run({ op: 'pruneKeys' });
  yield* run({ op: 'dropExpiredKey', key: key.key });
  const user = yield* run({ op: 'insert', input });
  yield* run({ op: 'rememberKey', key: key.key, fingerprint: key.fingerprint, userId: user.id });
  return { value: { ok: true, user, replayed: false }, changes: [{ kind: 'created', user }] };
}

/**
 * Several records in one transaction, all or none, ids in the inputs' order; with a key, as
 * createOnce does for one (the key remembers every record the batch created).
 */
function* createMany(
  inputs: readonly UserInput[],
  key: IdempotencyKey | undefined,
  prune: boolean,
  version: number,
): Program<BatchCreateResult | AtEnd> {
  if (key !== undefined) {
    const known = yield* rememberedBatch(key);
    if (known !== undefined) return { value: known };
  }
  if (inputs.length === 0) return { value: { ok: true, users: [], replayed: false } };
  if (version + inputs.length > MAX_ID) return CHANGES_AT_END;
  const full = yield* idLeft(inputs.length);
  if (full !== undefined) return full;
  const users = yield* run({ op: 'insertMany', inputs });
  if (key !== undefined) {
    if (prune) yield* run({ op: 'pruneKeys' });
    yield* run({ op: 'dropExpiredKey', key: key.key });
    const batch = users.map((user) => user.id);
    yield* run({ op: 'rememberKey', key: key.key, fingerprint: key.fingerprint, userId: batch[0] as number, batch });
  }
  return {
    value: { ok: true, users, replayed: false },
    changes: users.map((user) => ({ kind: 'created' as const, user })),
  };
}

function* update(
  id: number,
  changes: Partial<UserInput>,
  precondition: Precondition | undefined,
  changesLeft: boolean,
): Program<WriteResult | AtEnd> {
  const current = yield* run({ op: 'lock', id });
  if (current === undefined) return { value: NOT_FOUND };
  if (!preconditionHolds(precondition, current)) return { value: PRECONDITION_FAILED };
  if (!changesLeft) return CHANGES_AT_END;
  if (current.version >= MAX_RECORD_VERSION) {
    return atEnd(
      `Record ${id} is at its last version (${MAX_RECORD_VERSION}): it cannot be changed again. Delete it and create it anew.`,
    );
  }
  // The fields not given keep their values.
  const input: Partial<Record<RecordField, unknown>> = {};
  for (const field of RECORD_FIELDS) input[field] = changes[field] ?? current[field];
  const user = yield* run({ op: 'update', id, input: input as UserInput });
  return { value: { ok: true, user }, changes: [{ kind: 'updated', user, before: current }] };
}

function* remove(
  id: number,
  precondition: Precondition | undefined,
  changesLeft: boolean,
): Program<WriteResult | AtEnd> {
  const current = yield* run({ op: 'lock', id });
  if (current === undefined) return { value: NOT_FOUND };
  if (!preconditionHolds(precondition, current)) return { value: PRECONDITION_FAILED };
  if (!changesLeft) return CHANGES_AT_END;
  yield* run({ op: 'delete', id });
  return { value: { ok: true, user: current }, changes: [{ kind: 'deleted', user: current }] };
}

function* claimHook(url: string, owner: string, leaseMs: number): Program<HookCursor | undefined> {
  let row = yield* run({ op: 'hookRow', url });
  if (row === undefined) {
    yield* run({ op: 'hookCreate', url });
    row = (yield* run({ op: 'hookRow', url })) as HookRow;
  }
  if (row.leaseLive && row.owner !== owner) return { value: undefined };
  yield* run({ op: 'hookLease', url, owner, leaseMs });
  return { value: { version: row.version, history: yield* run({ op: 'history' }) } };
}

function* advanceHook(
  url: string,
  owner: string,
  cursor: HookCursor,
  leaseMs: number,
  failures: HookFailure[],
): Program<boolean> {
  // The owner is replaced only by a claim after the lease ran out: then this process lost it. A
  // restore starts a new history and sets the cursor itself: a position in the old one must not
  // overwrite it.
  const row = yield* run({ op: 'hookRow', url });
  if (row === undefined || row.owner !== owner) return { value: false };
  if ((yield* run({ op: 'history' })) !== cursor.history) return { value: false };
  for (const failure of failures) yield* run({ op: 'hookFail', url, ...failure });
  yield* run({ op: 'hookLease', url, owner, leaseMs, version: cursor.version });
  return { value: true };
}

/**
 * Turns write requests into programs. One per writer: it remembers when this writer last deleted
 * expired idempotency keys, so that happens at most once per PRUNE_INTERVAL_MS.
 */
export class WriteRules {
  #prunedAt = 0;

  /** Whether this keyed create should delete the expired keys (at most once per PRUNE_INTERVAL_MS). */
  #prune(): boolean {
    const now = Date.now();
    if (now - this.#prunedAt < PRUNE_INTERVAL_MS) return false;
    this.#prunedAt = now;
    return true;
  }

  /**
   * The program of a request, in a transaction whose change version is `version` so far: a write
   * that would take it past MAX_ID is refused (a keyed create only once its key is found new, so
   * a retry still replays; a change or deletion only once its record is found and its precondition
   * holds, so a missing record is still 404 and a stale one 412).
   */
  program(request: WriteRequest, version: number): Program<unknown> {
    const changesLeft = version < MAX_ID;
    switch (request.kind) {
      case 'create':
        return changesLeft ? create(request.input) : ended();
      case 'createOnce':
        return createOnce(request.input, request.key, this.#prune(), changesLeft);
      case 'createMany':
        return createMany(request.inputs, request.key, request.key !== undefined && this.#prune(), version);
      case 'update':
        return update(request.id, request.changes, request.precondition, changesLeft);
      case 'remove':
        return remove(request.id, request.precondition, changesLeft);
      case 'claimHook':
        return claimHook(request.url, request.owner, request.leaseMs);
      case 'advanceHook':
        return advanceHook(request.url, request.owner, request.cursor, request.leaseMs, request.failures);
      case 'releaseHook':
        return (function* (): Program<undefined> {
          yield* run({ op: 'hookRelease', url: request.url, owner: request.owner });
          return { value: undefined };
        })();
    }
  }
}

// eslint-disable-next-line require-yield -- a program of no steps
function* ended(): Program<AtEnd> {
  return CHANGES_AT_END;
}

/** Runs a program whose steps answer at once (SQLite). */
export function runNow<T>(program: Generator<Step, T, unknown>, exec: (step: Step) => unknown): T {
  let next = program.next();
  while (next.done !== true) next = program.next(exec(next.value));
  return next.value;
}

/** Runs a program whose steps are awaited (PostgreSQL). */
export async function runAwaiting<T>(
  program: Generator<Step, T, unknown>,
  exec: (step: Step) => Promise<unknown>,
): Promise<T> {
  let next = program.next();
  while (next.done !== true) next = program.next(await exec(next.value));
  return next.value;
}
