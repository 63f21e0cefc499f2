import type { Database } from 'better-sqlite3';

interface Job {
  work: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Runs the writes that arrive in the same turn of the event loop in one transaction, so that they
 * share one commit and one fsync. Each write runs in its own savepoint: one that throws is rolled
 * back alone and rejects alone. Every promise settles only after the commit is on disk.
 */
export class GroupCommit {
  readonly #db: Database;
  #pending: Job[] = [];
  #scheduled = false;

  constructor(db: Database) {
    this.#db = db;
  }

  run<T>(work: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  /** Runs whatever is queued now; used before the database closes. */
  drain(): void {
    if (this.#pending.length > 0) this.#flush();
  }

  #flush(): void {
    this.#scheduled = false;
    const jobs = this.#pending;
    this.#pending = [];
    if (jobs.length === 0) return;
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    try {
      this.#db.exec('BEGIN IMMEDIATE');
      for (const job of jobs) {
        this.#db.exec('SAVEPOINT job');
        try {
          outcomes.push({ ok: true, value: job.work() });
          this.#db.exec('RELEASE job');
        } catch (error) {
          this.#db.exec('ROLLBACK TO job');
          this.#db.exec('RELEASE job');
          outcomes.push({ ok: false, error });
        }
      }
      this.#db.exec('COMMIT');
    } catch (error) {
      if (this.#db.inTransaction) this.#db.exec('ROLLBACK');
      for (const job of jobs) job.reject(error);
      return;
    }
    jobs.forEach((job, i) => {
      const outcome = outcomes[i];
      if (outcome?.ok) job.resolve(outcome.value);
      else job.reject(outcome?.error);
    });
  }
}
