import type { Database, Statement } from 'better-sqlite3';
import type { Change, Commit } from './store.ts';

interface Job {
  work: () => unknown;
  changes: (value: never) => Change[];
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Runs the writes that arrive in the same turn of the event loop in one transaction, so that they
 * share one commit and one fsync. Each write runs in its own savepoint: one that throws is rolled
 * back alone and rejects alone. Each transaction also counts itself in store_version. Every
 * promise settles only after the commit is on disk and `onCommit` has seen it.
 */
export class GroupCommit {
  readonly #db: Database;
  readonly #bump: Statement<[], { version: number }>;
  // Prepared once: exec() would parse each of these again for every write.
  readonly #begin: Statement;
  readonly #commit: Statement;
  readonly #savepoint: Statement;
  readonly #release: Statement;
  readonly #rollbackTo: Statement;
  readonly #onCommit: (commit: Commit) => void;
  #pending: Job[] = [];
  #scheduled = false;

  constructor(db: Database, onCommit: (commit: Commit) => void) {
    this.#db = db;
    this.#onCommit = onCommit;
    this.#bump = db.prepare('UPDATE store_version SET version = version + 1 RETURNING version');
    this.#begin = db.prepare('BEGIN IMMEDIATE');
    this.#commit = db.prepare('COMMIT');
    this.#savepoint = db.prepare('SAVEPOINT job');
    this.#release = db.prepare('RELEASE job');
    this.#rollbackTo = db.prepare('ROLLBACK TO job');
  }

  run<T>(work: () => T, changes: (value: T) => Change[]): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ work, changes, resolve: resolve as (value: unknown) => void, reject });
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
    let version: number;
    try {
      this.#begin.run();
      version = (this.#bump.get() as { version: number }).version;
      for (const job of jobs) {
        this.#savepoint.run();
        try {
          outcomes.push({ ok: true, value: job.work() });
          this.#release.run();
        } catch (error) {
          this.#rollbackTo.run();
          this.#release.run();
          outcomes.push({ ok: false, error });
        }
      }
      this.#commit.run();
    } catch (error) {
      if (this.#db.inTransaction) this.#db.exec('ROLLBACK');
      for (const job of jobs) job.reject(error);
      return;
    }
    const changes = jobs.flatMap((job, i) => {
      const outcome = outcomes[i];
      return outcome?.ok ? job.changes(outcome.value as never) : [];
    });
    this.#onCommit({ version, changes });
    jobs.forEach((job, i) => {
      const outcome = outcomes[i];
      if (outcome?.ok) job.resolve(outcome.value);
      else job.reject(outcome?.error);
    });
  }
}
