import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import type { Change } from '../store.ts';
import { runNow, type WriteRequest, WriteRules } from '../write-rules.ts';
import { FileGuard } from './file-guard.ts';
import { openConnection } from './connection.ts';
import { isBusy, isUnavailable, needsReopen } from './errors.ts';
import { WriteStatements } from './statements.ts';
import { allGivenUp, take } from './write-claims.ts';

/** Why one write failed, as data that crosses threads. */
export interface Fault {
  /** A fault of the database or the machine (503, worth a retry), not of the request. */
  unavailable: boolean;
  message: string;
  /** Its wait for the write lock ended before it ran: nothing of it was stored. */
  waitedOut?: boolean;
}

/** The writes the store sends together, and their cells (write-claims.ts); without cells each write runs. */
export interface WriteBatch {
  requests: WriteRequest[];
  cells?: Int32Array;
}

/** A write the store gave up at its deadline, before the writer could take it. */
const GIVEN_UP: Fault = {
  unavailable: true,
  message: 'database unavailable: not run within DATABASE_TIMEOUT_MS',
  waitedOut: true,
};

export type JobOutcome = { ok: true; value: unknown } | { ok: false; fault: Fault };

export interface BatchResult {
  outcomes: JobOutcome[];
  /** The committed changes, in version order. */
  changes: Change[];
  /** Why writes are refused from now on, if they are (the service then reports not ready). */
  refusal?: string;
}

/** How often a connection that met an I/O fault is opened again to check the file. */
const REOPEN_INTERVAL_MS = 1000;

/** What a writer is told: how long to wait for another process's lock, and how long changes are kept. */
export interface WriterSettings {
  busyTimeoutMs: number;
  retentionMs: number;
}

/** The change log is pruned at most this often (and twice per retention, for short ones). */
const CHANGES_PRUNE_INTERVAL_MS = 60_000;

function faultOf(error: unknown): Fault {
  if (isUnavailable(error)) return { unavailable: true, message: `database unavailable: ${error.code}` };
  return { unavailable: false, message: (error as Error).message ?? String(error) };
}

/**
 * Runs batches of writes on its own connection: each batch is one transaction and one fsync (group
 * commit), each write in a savepoint, so one that throws is rolled back and fails alone. Every
 * change raises the database's change version by one. Runs on a worker thread of its own (see
 * writer-thread.ts), so neither the wait for another process's lock nor the fsync holds up the
 * event loop; or inline for a `:memory:` database, which no other connection can see.
 *
 * Before and after each transaction it checks that the files are still the ones it opened; an I/O
 * fault makes it reopen the file (and check it) before the next write; until then writes fail.
 */
export class SqliteWriter {
  readonly #path: string;
  readonly #busyTimeoutMs: number;
  readonly #retentionMs: number;
  #prunedAt = 0;
  readonly #rules = new WriteRules();
  readonly #guard: FileGuard | undefined;
  #db: Database.Database;
  #statements: WriteStatements;
  #control!: { begin: Statement; commit: Statement; savepoint: Statement; release: Statement; rollbackTo: Statement };
  /** Set once the files are gone: writes are refused until the service restarts. */
  #refusal: string | undefined;
  /** Set by an I/O fault: the connection must be opened again before it is trusted. */
  #broken: Fault | undefined;
  #reopenedAt = 0;

  /** Opens its own connection to `path`, or uses `db` (the only connection of a `:memory:` database). */
  constructor(path: string, { busyTimeoutMs, retentionMs }: WriterSettings, db?: Database.Database) {
    this.#path = path;
    this.#busyTimeoutMs = busyTimeoutMs;
    this.#retentionMs = retentionMs;
    this.#db = db ?? openConnection(path, { busyTimeoutMs });
    this.#statements = this.#prepare();
    this.#guard = path === ':memory:' ? undefined : new FileGuard(path);
  }

  get refusal(): string | undefined {
    return this.#refusal;
  }

  #prepare(): WriteStatements {
    const db = this.#db;
    this.#control = {
      begin: db.prepare('BEGIN IMMEDIATE'),
      commit: db.prepare('COMMIT'),
      savepoint: db.prepare('SAVEPOINT job'),
      release: db.prepare('RELEASE job'),
      rollbackTo: db.prepare('ROLLBACK TO job'),
    };
    return new WriteStatements(db);
  }

  /**
   * Commits the batches' writes as one transaction; never throws, every write gets an outcome, in
   * order. A write the store gave up while the transaction waited for the lock is not run.
   */
  commit(batches: readonly WriteBatch[]): BatchResult {
    const requests = batches.flatMap((batch) => batch.requests);
    const refused = this.#refused();
    if (refused !== undefined) return this.#failAll(requests, refused);
    if (batches.every((batch) => batch.cells !== undefined && allGivenUp(batch.cells))) {
      return this.#failAll(requests, GIVEN_UP);
    }
    const outcomes: JobOutcome[] = [];
    const changes: Change[] = [];
    const { begin, commit, savepoint, release, rollbackTo } = this.#control;
    let began = false;
    try {
      begin.run();
      began = true;
      const start = this.#statements.reads.version();
      let version = start;
      const at = new Date();
      for (const { requests: writes, cells } of batches) {
        for (let i = 0; i < writes.length; i++) {
          if (cells !== undefined && !take(cells, i)) {
            outcomes.push({ ok: false, fault: GIVEN_UP });
            continue;
          }
          savepoint.run();
          try {
            const program = this.#rules.program(writes[i] as WriteRequest, version);
            const outcome = runNow(program, (step) => this.#statements.exec(step));
            // Kept only once every change of the request is logged: a failure rolls them all back.
            const made = (outcome.changes ?? []).map((change, n) => ({ version: version + 1 + n, ...change, at }));
            for (const change of made) this.#statements.logChange(change);
            version += made.length;
            changes.push(...made);
            release.run();
            outcomes.push({ ok: true, value: outcome.value });
          } catch (error) {
            rollbackTo.run();
            release.run();
            outcomes.push({ ok: false, fault: faultOf(error) });
          }
        }
      }
      if (version !== start) this.#statements.setVersion.run(version);
      if (at.getTime() - this.#prunedAt >= Math.min(CHANGES_PRUNE_INTERVAL_MS, this.#retentionMs / 2)) {
        this.#prunedAt = at.getTime();
        this.#statements.pruneChanges(this.#retentionMs, version);
      }
      commit.run();
    } catch (error) {
      if (this.#db.inTransaction) {
        try {
          this.#db.exec('ROLLBACK');
        } catch {
          // The connection is broken; it is reopened below.
        }
      }
      if (needsReopen(error) && this.#guard !== undefined) this.#broken = faultOf(error);
      // The lock not had within the wait: no write ran.
      const waitedOut = !began && isBusy(error);
      return this.#failAll(requests, waitedOut ? { ...faultOf(error), waitedOut } : faultOf(error));
    }
    if (this.#guard?.problem() !== undefined) {
      const onlyLog = this.#guard.onlyLogGone();
      const refusal = this.watch() as string;
      // Copied into the database file when only the log was deleted; otherwise it went to a file
      // that is no longer the database and will not be there after a restart.
      if (!onlyLog)
        return this.#failAll(requests, { unavailable: true, message: `${refusal}; this write was not kept` });
    }
    return { outcomes, changes };
  }

  /**
   * Looks at the files (the writer thread does so every second too). Once they are gone, writes are
   * refused for good. When only the write-ahead log was deleted, the commits it still holds (SQLite
   * keeps the deleted file open) are first copied into the database file, so none is lost.
   */
  watch(): string | undefined {
    if (this.#refusal !== undefined || this.#guard === undefined) return this.#refusal;
    const problem = this.#guard.problem();
    if (problem === undefined) return undefined;
    this.#refusal = `${problem}; ${this.#guard.onlyLogGone() ? this.#saveLog() : this.#rescue()}`;
    return this.#refusal;
  }

  /** The log was deleted: its commits go into the database file, which is still in place. */
  #saveLog(): string {
    try {
      this.#db.pragma('wal_checkpoint(RESTART)');
      return 'every commit it held was copied into the database file; restart the service to go on';
    } catch (error) {
      return `its commits could not be copied into the database file (${(error as Error).message}); restart the service`;
    }
  }

  /**
   * The database file was deleted or replaced: this connection still sees the database as it was,
   * so a copy of it is saved beside the path, and the orphaned log is moved out of the way of the
   * next start.
   */
  #rescue(): string {
    const stamp = new Date().toISOString().replaceAll(':', '-');
    const copy = `${this.#path}.rescued-${stamp}`;
    let saved: string;
    try {
      this.#db.prepare('VACUUM INTO ?').run(copy);
      saved = `the database as this service last saw it was saved to ${copy}`;
    } catch (error) {
      saved = `it could not be saved (${(error as Error).message})`;
    }
    const aside = this.#guard?.setLogAside(stamp);
    const log = aside === undefined ? '' : `; its write-ahead log was moved to ${aside}`;
    return `${saved}${log}; writes are refused until the service restarts`;
  }

  /**
   * A read met a fault of the file (damage, an I/O error): the next write first reopens the file
   * and runs SQLite's quick_check, as after a fault of its own, and writes are refused (503) while
   * the check fails. Writes that would not have reached the damage could still harm the file.
   */
  suspect(why: string): void {
    if (this.#guard === undefined || this.#broken !== undefined) return;
    this.#broken = { unavailable: true, message: `database unavailable: a read failed (${why})` };
    this.#reopenedAt = 0;
  }

  /** Why writes cannot be tried now, or undefined. */
  #refused(): Fault | undefined {
    if (this.watch() !== undefined) return { unavailable: true, message: this.#refusal as string };
    if (this.#broken === undefined) return undefined;
    if (Date.now() - this.#reopenedAt < REOPEN_INTERVAL_MS) return this.#broken;
    this.#reopenedAt = Date.now();
    try {
      const db = openConnection(this.#path, { busyTimeoutMs: this.#busyTimeoutMs, check: true });
      this.#close();
      this.#db = db;
      this.#statements = this.#prepare();
      this.#broken = undefined;
      return undefined;
    } catch (error) {
      this.#broken = { unavailable: true, message: `database unavailable: ${(error as Error).message}` };
      return this.#broken;
    }
  }

  #failAll(requests: WriteRequest[], fault: Fault): BatchResult {
    return { outcomes: requests.map(() => ({ ok: false, fault })), changes: [], refusal: this.#refusal };
  }

  #close(): void {
    try {
      if (this.#db.open) this.#db.close();
    } catch {
      // A connection broken by an I/O fault may fail to close; it is let go either way.
    }
  }

  close(): void {
    this.#guard?.close();
    this.#close();
  }
}
