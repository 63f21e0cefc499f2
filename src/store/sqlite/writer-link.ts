import type { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { type Change, StoreOpenError, StoreUnavailableError } from '../store.ts';
import { startThread } from './thread-start.ts';
import { type JobOutcome, SqliteWriter, type WriteBatch, type WriterSettings } from './writer.ts';
import type { FromWriter, ToWriter, WriterData } from './writer-thread.ts';

/** Where the writer runs, seen from the store: batches in, outcomes and committed changes out. */
export interface WriterLink {
  /** The outcome of each write, after its transaction committed (or failed). */
  submit(batch: WriteBatch): Promise<JobOutcome[]>;
  /** Why writes are refused, once the writer has found a reason that lasts. */
  readonly refusal: string | undefined;
  /** A read met a fault of the file (damage, an I/O error): the writer checks the file before its next write. */
  suspect(why: string): void;
  close(): Promise<void>;
}

/** Called with every committed transaction's changes, before the outcomes of its writes are given. */
export type OnChanges = (changes: Change[]) => void;

/** A `:memory:` database has one connection, the store's own: its writer runs on the event loop. */
export class InlineLink implements WriterLink {
  readonly #writer: SqliteWriter;
  readonly #onChanges: OnChanges;

  constructor(db: Database.Database, settings: WriterSettings, onChanges: OnChanges) {
    this.#writer = new SqliteWriter(':memory:', settings, db);
    this.#onChanges = onChanges;
  }

  get refusal(): string | undefined {
    return this.#writer.refusal;
  }

  suspect(why: string): void {
    this.#writer.suspect(why);
  }

  async submit(batch: WriteBatch): Promise<JobOutcome[]> {
    const { outcomes, changes } = this.#writer.commit([batch]);
    this.#onChanges(changes);
    return outcomes;
  }

  async close(): Promise<void> {}
}

/** After the writer thread died, the wait before another is started. */
const RESTART_INTERVAL_MS = 1000;

/** The writer on a worker thread of its own (see writer.ts for why). */
export class ThreadLink implements WriterLink {
  readonly #data: WriterData;
  readonly #onChanges: OnChanges;
  #worker: Worker | undefined;
  #startedAt = 0;
  #nextId = 0;
  readonly #waiting = new Map<number, { resolve(outcomes: JobOutcome[]): void; reject(error: Error): void }>();
  #refusal: string | undefined;
  #closed: (() => void) | undefined;

  private constructor(data: WriterData, onChanges: OnChanges) {
    this.#data = data;
    this.#onChanges = onChanges;
  }

  /** Starts the writer thread; rejects with the reason it could not open the database. */
  static async start(path: string, settings: WriterSettings, onChanges: OnChanges): Promise<ThreadLink> {
    const link = new ThreadLink({ path, ...settings }, onChanges);
    await link.#spawn();
    return link;
  }

  get refusal(): string | undefined {
    return this.#refusal;
  }

  #spawn(): Promise<void> {
    this.#startedAt = Date.now();
    const worker = startThread('sqlite-writer', './writer-thread.ts', this.#data);
    this.#worker = worker;
    worker.unref();
    return new Promise((resolve, reject) => {
      worker.on('message', (message: FromWriter) => {
        switch (message.type) {
          case 'ready':
            return resolve();
          case 'failed':
            void worker.terminate();
            return reject(new StoreOpenError(message.message));
          case 'committed':
            if (message.result.refusal !== undefined) this.#refusal = message.result.refusal;
            this.#onChanges(message.result.changes);
            for (const batch of message.batches) {
              this.#waiting.get(batch.id)?.resolve(batch.outcomes);
              this.#waiting.delete(batch.id);
            }
            if (this.#waiting.size === 0) worker.unref();
            return;
          case 'refused':
            this.#refusal = message.refusal;
            return;
          case 'closed':
            return this.#closed?.();
        }
      });
      const lost = (why: string) => {
        reject(new StoreOpenError(why));
        if (this.#worker !== worker) return;
        this.#worker = undefined;
        const error = new StoreUnavailableError(`database unavailable: ${why}`);
        for (const waiter of this.#waiting.values()) waiter.reject(error);
        this.#waiting.clear();
        this.#closed?.();
      };
      worker.once('error', (error) => lost(`the SQLite writer failed: ${error.message}`));
      worker.once('exit', (code) => lost(`the SQLite writer stopped (exit code ${code})`));
    });
  }

  async submit(batch: WriteBatch): Promise<JobOutcome[]> {
    if (this.#worker === undefined) {
      if (this.#closed !== undefined || Date.now() - this.#startedAt < RESTART_INTERVAL_MS) {
        throw new StoreUnavailableError('database unavailable: the SQLite writer is not running');
      }
      await this.#spawn().catch((error: Error) => {
        throw new StoreUnavailableError(`database unavailable: ${error.message}`);
      });
    }
    const worker = this.#worker as Worker;
    const id = this.#nextId++;
    worker.ref();
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      // The cells' memory is shared with the thread, not copied.
      worker.postMessage({ type: 'batch', id, batch } satisfies ToWriter);
    });
  }

  suspect(why: string): void {
    // Posted before any batch sent after it, so the thread sees it first.
    this.#worker?.postMessage({ type: 'suspect', why } satisfies ToWriter);
  }

  /** Lets every batch sent so far commit, then ends the thread. */
  close(): Promise<void> {
    const worker = this.#worker;
    if (worker === undefined || this.#closed !== undefined) return Promise.resolve();
    return new Promise((resolve) => {
      this.#closed = resolve;
      worker.ref();
      worker.postMessage({ type: 'close' } satisfies ToWriter);
    });
  }
}
