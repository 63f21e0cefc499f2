import { setTimeout as sleep } from 'node:timers/promises';
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { CommitListeners } from '../commit-listeners.ts';
import {
  type ChangeLogPage,
  type Commit,
  type BatchCreateResult,
  type CreateResult,
  DEFAULT_CHANGES_RETENTION_MS,
  type HookCursor,
  type HookFailure,
  type IdempotencyKey,
  type ListFilter,
  type ListOrder,
  narrows,
  type Stats,
  type Precondition,
  StoreAtEndError,
  StoreGaveUpError,
  StoreUnavailableError,
  type User,
  type UserInput,
  type UserStore,
  type WriteResult,
} from '../store.ts';
import { isAtEnd, remembered, rememberedBatch, runNow, type WriteRequest } from '../write-rules.ts';
import { FileGuard } from './file-guard.ts';
import { openConnection } from './connection.ts';
import { ReaderPool } from './reader-pool.ts';
import { asUnavailable, isBusy, needsReopen } from './errors.ts';
import { ReadStatements } from './statements.ts';
import type { JobOutcome } from './writer.ts';
import { InlineLink, ThreadLink, type WriterLink } from './writer-link.ts';
import { claimCells, giveUp } from './write-claims.ts';
import { SharedWatch } from '../shared-watch.ts';
import type { GroupField } from '../../record/fields.ts';

export interface SqliteOptions {
  /** The longest a call waits for a lock another process holds; then it fails with 503. */
  busyTimeoutMs?: number;
  /** How long the change log keeps a change. */
  changesRetentionMs?: number;
  /** Reader threads for listings and counts (see ReaderPool), and how many of those may wait. */
  readers?: number;
  readQueue?: number;
  /** The longest a listing or count may take on a reader thread, waiting included. */
  readTimeoutMs?: number;
}

/** How often the change version is read for commits of other processes, while anyone watches. */
const WATCH_INTERVAL_MS = 50;

/**
 * Opens (creating if needed) an SQLite database: reads of one record and plain pages on this thread,
 * other listings and counts on reader threads (reader-pool.ts), writes through a writer thread of
 * their own (see writer.ts), the schema brought up to date first.
 */
export async function openSqliteStore(path: string, options: SqliteOptions = {}): Promise<SqliteStore> {
  const busyTimeoutMs = Math.trunc(options.busyTimeoutMs ?? 5000);
  const memory = path === ':memory:';
  // The schema's migrations may wait for the write lock (nothing is served yet); after them, reads
  // never wait inside SQLite (that would hold the event loop): a busy read is retried here.
  const db = openConnection(path, { busyTimeoutMs, migrate: true });
  if (!memory) db.pragma('busy_timeout = 0');
  const listeners = new CommitListeners();
  const onChanges = (changes: Commit['changes']) => listeners.emit({ changes });
  const settings = { busyTimeoutMs, retentionMs: options.changesRetentionMs ?? DEFAULT_CHANGES_RETENTION_MS };
  if (memory) {
    // A `:memory:` database is this connection's alone: it is read and written here.
    try {
      return new SqliteStore(
        db,
        new InlineLink(db, settings, onChanges),
        undefined,
        listeners,
        undefined,
        busyTimeoutMs,
      );
    } catch (error) {
      db.close();
      throw error;
    }
  }
  const readers = {
    threads: options.readers ?? DEFAULT_READERS,
    queueLimit: options.readQueue ?? DEFAULT_READ_QUEUE,
    timeoutMs: options.readTimeoutMs ?? busyTimeoutMs,
    busyTimeoutMs,
  };
  // The writer and the first reader thread start side by side; if either cannot, neither is kept.
  const [link, pool] = await Promise.allSettled([
    ThreadLink.start(path, settings, onChanges),
    ReaderPool.start(path, readers),
  ]);
  let failure: unknown =
    link.status === 'rejected' ? link.reason : pool.status === 'rejected' ? pool.reason : undefined;
  if (link.status === 'fulfilled' && pool.status === 'fulfilled') {
    try {
      return new SqliteStore(db, link.value, pool.value, listeners, new FileGuard(path), busyTimeoutMs);
    } catch (error) {
      failure = error;
    }
  }
  await Promise.all([
    link.status === 'fulfilled' ? link.value.close() : undefined,
    pool.status === 'fulfilled' ? pool.value.close() : undefined,
  ]);
  db.close();
  throw failure;
}

interface Job {
  request: WriteRequest;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  /** Ends its wait DATABASE_TIMEOUT_MS after it was asked. */
  timer: NodeJS.Timeout | undefined;
  /** Its batch's cells and its index there, once sent to the writer (write-claims.ts). */
  cells: Int32Array | undefined;
  index: number;
  /** Given up before it was sent: left out of the next batch. */
  givenUp: boolean;
}

/** Reader threads and waiting reads unless the settings say otherwise (`SQLITE_READERS`, `SQLITE_READ_QUEUE`). */
const DEFAULT_READERS = 2;
const DEFAULT_READ_QUEUE = 100;

/**
 * Whether a listing is a plain page (no filter, search or sort: records in id order from a given id),
 * whose cost the page size bounds: it is read on the event loop, as one record is.
 */
const plainPage = (filter: ListFilter, order: ListOrder | undefined) => order === undefined && !narrows(filter);

export class SqliteStore implements UserStore {
  readonly #db: Database.Database;
  readonly #reads: ReadStatements;
  readonly #link: WriterLink;
  readonly #pool: ReaderPool | undefined;
  readonly #listeners: CommitListeners;
  readonly #guard: FileGuard | undefined;
  readonly #busyTimeoutMs: number;
  readonly #watchers = new SharedWatch((wake) => this.#watch(wake));
  /** Writes asked for in this turn of the event loop: they go to the writer as one batch. */
  #queue: Job[] = [];
  /** The statements of the turn's shared read transaction; none for `:memory:`. */
  readonly #turn: { begin: Statement; commit: Statement } | undefined;
  #inTurn = false;
  #inFlight = new Set<Promise<void>>();

  constructor(
    db: Database.Database,
    link: WriterLink,
    pool: ReaderPool | undefined,
    listeners: CommitListeners,
    guard: FileGuard | undefined,
    busyTimeoutMs: number,
  ) {
    this.#db = db;
    this.#reads = new ReadStatements(db);
    this.#link = link;
    this.#pool = pool;
    if (pool !== undefined) pool.onFault = (why) => link.suspect(why);
    this.#listeners = listeners;
    this.#guard = guard;
    this.#busyTimeoutMs = busyTimeoutMs;
    this.#turn = guard === undefined ? undefined : { begin: db.prepare('BEGIN'), commit: db.prepare('COMMIT') };
  }

  /**
   * The reads of one turn of the event loop share one read transaction (ended at the turn's end):
   * SQLite's per-statement transaction takes and drops its locks with system calls each time,
   * more than half of what reading one record costs. Requests answered in one turn are concurrent
   * anyway; a client's next request comes in a later turn and sees every commit answered before it.
   * (Not for `:memory:`, whose one connection also writes.)
   */
  #openTurn(): void {
    if (this.#turn === undefined || this.#inTurn) return;
    this.#turn.begin.run();
    this.#inTurn = true;
    setImmediate(this.#endTurn);
  }

  readonly #endTurn = (): void => {
    this.#inTurn = false;
    try {
      this.#turn?.commit.run();
    } catch {
      // A read that failed may have ended the transaction already; the next turn starts afresh.
      if (this.#db.inTransaction) this.#db.exec('ROLLBACK');
    }
  };

  /** A read; a file locked by another process (rare in WAL mode) is waited for here, not in SQLite. */
  #read<T>(work: () => T): Promise<T> {
    try {
      this.#openTurn();
      return Promise.resolve(work());
    } catch (error) {
      return isBusy(error) ? this.#retry(work) : Promise.reject(this.#fault(error));
    }
  }

  /** A read's error as the store reports it; a fault of the file has the writer check it first. */
  #fault(error: unknown): unknown {
    if (needsReopen(error)) this.#link.suspect((error as Error).message);
    return asUnavailable(error);
  }

  async #retry<T>(work: () => T): Promise<T> {
    const deadline = performance.now() + this.#busyTimeoutMs;
    for (let wait = 1; ; wait = Math.min(wait * 2, 50)) {
      await sleep(wait);
      try {
        return work();
      } catch (error) {
        if (!isBusy(error) || performance.now() + wait > deadline) throw this.#fault(error);
      }
    }
  }

  /**
   * A plain page is read here; any other listing on a reader thread: a search of one or two letters,
   * a range or a sort that no index serves, may read every record, which would hold every other
   * request for as long.
   */
  list(filter: ListFilter, order?: ListOrder): Promise<User[]> {
    if (this.#pool === undefined || plainPage(filter, order)) return this.#read(() => this.#reads.list(filter, order));
    return this.#pool.read({ op: 'list', filter, order }) as Promise<User[]>;
  }

  get(id: number): Promise<User | undefined> {
    return this.#read(() => this.#reads.get(id));
  }

  version(): Promise<number> {
    return this.#read(() => this.#reads.version());
  }

  position(): Promise<{ version: number; history: string }> {
    return this.#read(() => this.#reads.position());
  }

  /** On a reader thread: a count reads every matching index entry (every record, for all of them). */
  count(filter?: ListFilter): Promise<number> {
    if (this.#pool === undefined) return this.#read(() => this.#reads.count(filter));
    return this.#pool.read({ op: 'count', filter }) as Promise<number>;
  }

  /** On a reader thread, as a count: it reads every matching record (index entry). */
  stats(filter: ListFilter, group: GroupField | undefined, limit: number): Promise<Stats> {
    if (this.#pool === undefined) return this.#read(() => this.#reads.stats(filter, group, limit));
    return this.#pool.read({ op: 'stats', filter, group, limit }) as Promise<Stats>;
  }

  create(input: UserInput): Promise<User> {
    return this.#write({ kind: 'create', input }) as Promise<User>;
  }

  async createOnce(input: UserInput, key: IdempotencyKey): Promise<CreateResult> {
    // A retry of an answered request is a read; only an unknown key needs the writer.
    const known = await this.#read(() => runNow(remembered(key), (step) => this.#reads.exec(step)));
    if (known !== undefined) return known;
    return this.#write({ kind: 'createOnce', input, key }) as Promise<CreateResult>;
  }

  async createMany(inputs: UserInput[], key?: IdempotencyKey): Promise<BatchCreateResult> {
    // As createOnce: a retry of an answered batch is a read.
    if (key !== undefined) {
      const known = await this.#read(() => runNow(rememberedBatch(key), (step) => this.#reads.exec(step)));
      if (known !== undefined) return known;
    }
    return this.#write({ kind: 'createMany', inputs, key }) as Promise<BatchCreateResult>;
  }

  update(id: number, changes: Partial<UserInput>, precondition?: Precondition): Promise<WriteResult> {
    return this.#write({ kind: 'update', id, changes, precondition }) as Promise<WriteResult>;
  }

  remove(id: number, precondition?: Precondition): Promise<WriteResult> {
    return this.#write({ kind: 'remove', id, precondition }) as Promise<WriteResult>;
  }

  onCommit(listener: (commit: Commit) => void): void {
    this.#listeners.add(listener);
  }

  changes(after: number, limit: number): Promise<ChangeLogPage> {
    return this.#read(() => this.#reads.changes(after, limit));
  }

  watch(wake: () => void): () => void {
    return this.#watchers.add(wake);
  }

  #watch(wake: () => void): () => void {
    // Another process's commit shows only in the file: its change version is read a few times a second.
    // The first look wakes too: a commit between the watcher's own last read and this look (a
    // moment, or seconds on a busy machine) has nothing earlier to differ from, and would otherwise
    // wait unseen for the next one. PostgreSQL's watch wakes once it LISTENs, for the same reason.
    let seen: number | undefined;
    const timer = setInterval(() => {
      this.version().then(
        (version) => {
          if (version !== seen) wake();
          seen = version;
        },
        () => undefined,
      );
    }, WATCH_INTERVAL_MS);
    timer.unref();
    return () => clearInterval(timer);
  }

  claimHook(url: string, owner: string, leaseMs: number): Promise<HookCursor | undefined> {
    return this.#write({ kind: 'claimHook', url, owner, leaseMs }) as Promise<HookCursor | undefined>;
  }

  advanceHook(
    url: string,
    owner: string,
    cursor: HookCursor,
    leaseMs: number,
    failures: HookFailure[],
  ): Promise<boolean> {
    return this.#write({ kind: 'advanceHook', url, owner, cursor, leaseMs, failures }) as Promise<boolean>;
  }

  async releaseHook(url: string, owner: string): Promise<void> {
    await this.#write({ kind: 'releaseHook', url, owner });
  }

  async ping(): Promise<void> {
    const refusal = this.#link.refusal ?? this.#guard?.readiness();
    if (refusal !== undefined) throw new StoreUnavailableError(`database unavailable: ${refusal}`);
    await this.#read(() => this.#reads.version());
  }

  /**
   * A write waits at most DATABASE_TIMEOUT_MS from now, whether behind another batch or for the
   * lock itself: then it is answered 503, and never run (write-claims.ts), unless the writer has
   * taken it by then, when its transaction's outcome answers it.
   */
  #write(request: WriteRequest): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const job: Job = { request, resolve, reject, timer: undefined, cells: undefined, index: 0, givenUp: false };
      job.timer = setTimeout(() => this.#giveUp(job), this.#busyTimeoutMs);
      this.#queue.push(job);
      if (this.#queue.length === 1 && this.#inFlight.size === 0) setImmediate(() => this.#flush());
    });
  }

  #giveUp(job: Job): void {
    if (job.cells === undefined) job.givenUp = true;
    else if (!giveUp(job.cells, job.index)) return;
    job.reject(new StoreGaveUpError(gaveUp(this.#busyTimeoutMs)));
  }

  /**
   * Sends the writes waiting to the writer as one batch. One batch is in flight at a time: writes
   * that come while the writer commits wait and go together as the next batch (a message to the
   * writer thread costs as much as a small write, so fewer and larger ones are cheaper, and the
   * writer would take them as one transaction anyway).
   */
  #flush(): void {
    const jobs = this.#queue.filter((job) => !job.givenUp);
    this.#queue = [];
    if (jobs.length === 0) return;
    const cells = claimCells(jobs.length);
    jobs.forEach((job, index) => {
      job.cells = cells;
      job.index = index;
    });
    const sent = this.#link.submit({ requests: jobs.map((job) => job.request), cells }).then(
      (outcomes) => settle(jobs, outcomes, this.#busyTimeoutMs),
      (error: unknown) => {
        for (const job of jobs) {
          clearTimeout(job.timer);
          job.reject(error);
        }
      },
    );
    this.#inFlight.add(sent);
    void sent.finally(() => {
      this.#inFlight.delete(sent);
      if (this.#inFlight.size === 0) this.#flush();
    });
  }

  async close(): Promise<void> {
    if (this.#inTurn) this.#endTurn();
    this.#flush();
    await Promise.all(this.#inFlight);
    await Promise.all([this.#link.close(), this.#pool?.close()]);
    this.#guard?.close();
    if (this.#db.open) this.#db.close();
  }
}

/** Why a write was given up. */
const gaveUp = (timeoutMs: number) =>
  `database unavailable: the write was not taken within DATABASE_TIMEOUT_MS (${timeoutMs} ms) of being asked; not stored`;

/** Each write's answer from its outcome (a write given up at its deadline has had its answer). */
function settle(jobs: Job[], outcomes: JobOutcome[], timeoutMs: number): void {
  jobs.forEach((job, i) => {
    clearTimeout(job.timer);
    const outcome = outcomes[i];
    if (outcome?.ok === true && isAtEnd(outcome.value)) job.reject(new StoreAtEndError(outcome.value.atEnd));
    else if (outcome?.ok === true) job.resolve(outcome.value);
    else if (outcome?.fault.waitedOut === true) job.reject(new StoreGaveUpError(gaveUp(timeoutMs)));
    else if (outcome?.fault.unavailable === true) job.reject(new StoreUnavailableError(outcome.fault.message));
    else job.reject(new Error(outcome?.fault.message ?? 'the writer gave no outcome'));
  });
}
