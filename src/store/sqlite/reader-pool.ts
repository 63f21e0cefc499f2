import type { Worker } from 'node:worker_threads';
import { StoreBusyError, StoreOpenError, StoreTimeoutError, StoreUnavailableError } from '../store.ts';
import type { FromReader, ReaderData, ReadRequest, ToReader } from './reader-thread.ts';
import { startThread } from './thread-start.ts';

export interface ReaderSettings {
  /** Reader threads at most, each with its own connection. */
  threads: number;
  /** Reads waiting for a thread at most; one more is refused at once (StoreBusyError). */
  queueLimit: number;
  /** The longest a read may take, waiting included; then it is given up (StoreTimeoutError). */
  timeoutMs: number;
  busyTimeoutMs: number;
}

interface Job {
  request: ReadRequest;
  resolve(value: unknown): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
  /** When the read is due (performance.now()): a result that comes later is given up like one the timer caught. */
  deadline: number;
  /** Answered (also when given up while its thread still reads it). */
  settled: boolean;
}

interface Reader {
  worker: Worker;
  /** Set to 1 to give up the read it runs (reader-thread.ts checks it between statements). */
  cancel: Int32Array;
  ready: boolean;
  /** The read it runs now, answered or not: the thread takes another once it reports this one done. */
  job: Job | undefined;
  /** Being ended (the store closes, its connection is suspect, or it holds enough statements): it takes no more reads. */
  retiring: boolean;
}

/** After a reader thread could not open the database, the wait before another is tried. */
const RESTART_INTERVAL_MS = 1000;

/**
 * The reads that may take long (see SqliteStore.list), on reader threads of their own, so no
 * listing holds the event loop: a search of one or two letters reads every record (a quarter of a
 * second per million), and the event loop meanwhile answers everything else. One thread starts with
 * the store, the others when reads wait for one. Reads wait in order for a free thread, at most
 * `queueLimit` of them; a read not done within `timeoutMs` (waiting included) is answered
 * StoreTimeoutError at once. If it was running, its thread is told to give it up: SQLite cannot be
 * interrupted from outside (better-sqlite3 has no interrupt, and a terminated thread would still
 * finish its statement first), so the thread stops after the statement it is in and takes the next
 * read; no more than `threads` threads ever read at once.
 */
export class ReaderPool {
  readonly #path: string;
  readonly #settings: ReaderSettings;
  readonly #readers = new Set<Reader>();
  readonly #exits = new Set<Promise<void>>();
  #waiting: Job[] = [];
  #failure: { message: string; at: number } | undefined;
  /** Told of a read that met a fault of the file (the store has the writer check it). */
  onFault: ((why: string) => void) | undefined;
  #closed = false;

  private constructor(path: string, settings: ReaderSettings) {
    this.#path = path;
    this.#settings = settings;
  }

  /**
   * Starts the first reader thread (the others start as reads wait for one), so that the first
   * listing does not wait for a thread to start; rejects with the reason it could not open the file.
   */
  static async start(path: string, settings: ReaderSettings): Promise<ReaderPool> {
    const pool = new ReaderPool(path, settings);
    try {
      await pool.#spawn();
    } catch (error) {
      await pool.close();
      throw new StoreOpenError(`cannot start an SQLite reader thread: ${(error as Error).message}`);
    }
    return pool;
  }

  read(request: ReadRequest): Promise<unknown> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError('database unavailable: the store is closing'));
    const failure = this.#failure;
    if (failure !== undefined && Date.now() - failure.at < RESTART_INTERVAL_MS) {
      return Promise.reject(new StoreUnavailableError(`database unavailable: ${failure.message}`));
    }
    if (this.#waiting.length >= this.#settings.queueLimit) {
      return Promise.reject(
        new StoreBusyError(`database busy: ${this.#waiting.length} listings already wait for a reader thread`),
      );
    }
    return new Promise((resolve, reject) => {
      const job: Job = {
        request,
        resolve,
        reject,
        timer: setTimeout(() => this.#expire(job), this.#settings.timeoutMs),
        deadline: performance.now() + this.#settings.timeoutMs,
        settled: false,
      };
      job.timer.unref();
      this.#waiting.push(job);
      this.#dispatch();
    });
  }

  /** Gives waiting reads to idle threads, and starts threads for those left while there is room. */
  #dispatch(): void {
    for (const reader of this.#readers) {
      if (this.#waiting.length === 0) return;
      if (reader.ready && reader.job === undefined && !reader.retiring) this.#run(reader, this.#waiting.shift() as Job);
    }
    let starting = [...this.#readers].filter((reader) => !reader.ready).length;
    while (this.#waiting.length > starting && this.#readers.size < this.#settings.threads && !this.#closed) {
      // A thread that cannot start says so to the reads waiting (the 'failed' message).
      this.#spawn().catch(() => undefined);
      starting++;
    }
  }

  #run(reader: Reader, job: Job): void {
    Atomics.store(reader.cancel, 0, 0);
    reader.job = job;
    reader.worker.ref();
    reader.worker.postMessage({ request: job.request } satisfies ToReader);
  }

  /** Starts a thread; resolves once it has opened the database, rejects if it could not. */
  #spawn(): Promise<void> {
    const data: ReaderData = {
      path: this.#path,
      busyTimeoutMs: this.#settings.busyTimeoutMs,
      cancel: new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT),
    };
    const worker = startThread('sqlite-reader', './reader-thread.ts', data);
    const reader: Reader = {
      worker,
      cancel: new Int32Array(data.cancel),
      ready: false,
      job: undefined,
      retiring: false,
    };
    this.#readers.add(reader);
    let started: { resolve(): void; reject(error: Error): void } | undefined;
    const ready = new Promise<void>((resolve, reject) => {
      started = { resolve, reject };
    });
    worker.on('message', (message: FromReader) => {
      switch (message.type) {
        case 'ready':
          reader.ready = true;
          this.#failure = undefined;
          worker.unref();
          started?.resolve();
          return this.#dispatch();
        case 'failed':
          this.#failure = { message: message.message, at: Date.now() };
          this.#retire(reader);
          started?.reject(new Error(message.message));
          for (const job of this.#waiting.splice(0)) this.#settle(job, new StoreUnavailableError(message.message));
          return;
        case 'done': {
          const job = reader.job;
          reader.job = undefined;
          if (!reader.retiring) worker.unref();
          if (job !== undefined) {
            // On a busy machine the thread's answer and the due timer can reach this thread in the
            // same turn, the answer first: the deadline decides, not the order they were seen in.
            if (performance.now() > job.deadline) this.#settle(job, this.#overTime());
            else if (message.ok) this.#settle(job, undefined, message.value);
            else if (message.fault.unavailable) this.#settle(job, new StoreUnavailableError(message.fault.message));
            else this.#settle(job, new Error(message.fault.message));
          }
          if (!message.ok && message.fault.reopen) this.onFault?.(message.fault.message);
          if (message.ok ? message.crowded : message.fault.reopen) this.#retire(reader);
          return this.#dispatch();
        }
      }
    });
    const exited = new Promise<void>((resolve) => {
      const lost = (why: string) => {
        started?.reject(new Error(why));
        this.#readers.delete(reader);
        const job = reader.job;
        reader.job = undefined;
        if (job !== undefined) this.#settle(job, new StoreUnavailableError(`database unavailable: ${why}`));
        resolve();
        this.#dispatch();
      };
      worker.once('error', (error) => lost(`a reader thread failed: ${error.message}`));
      worker.once('exit', (code) => lost(`a reader thread stopped (exit code ${code})`));
    });
    this.#exits.add(exited);
    void exited.then(() => this.#exits.delete(exited));
    return ready;
  }

  /** Ends a thread; it stays counted (so no other starts in its place) until it has exited. */
  #retire(reader: Reader): void {
    if (reader.retiring) return;
    reader.retiring = true;
    void reader.worker.terminate();
  }

  /** A read not done in time: answered now; its thread, if it was running it, gives it up. */
  #expire(job: Job): void {
    const at = this.#waiting.indexOf(job);
    if (at !== -1) {
      this.#waiting.splice(at, 1);
      return this.#settle(
        job,
        new StoreTimeoutError(`database timeout: waited ${this.#settings.timeoutMs} ms for a reader thread`),
      );
    }
    for (const reader of this.#readers) {
      if (reader.job !== job) continue;
      Atomics.store(reader.cancel, 0, 1);
      return this.#settle(job, this.#overTime());
    }
  }

  #overTime(): StoreTimeoutError {
    return new StoreTimeoutError(`database timeout: a read ran over ${this.#settings.timeoutMs} ms`);
  }

  #settle(job: Job, error: Error | undefined, value?: unknown): void {
    if (job.settled) return;
    job.settled = true;
    clearTimeout(job.timer);
    if (error === undefined) job.resolve(value);
    else job.reject(error);
  }

  /** Refuses reads still waiting, ends every thread (a read running is refused), and waits for them to exit. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#waiting.splice(0)) {
      this.#settle(job, new StoreUnavailableError('database unavailable: the store is closing'));
    }
    for (const reader of this.#readers) this.#retire(reader);
    await Promise.all(this.#exits);
  }
}
