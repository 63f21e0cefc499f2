import type { Pool, PoolClient } from 'pg';
import { type Change, StoreAtEndError } from '../store.ts';
import { isAtEnd, runAwaiting, type WriteRequest, WriteRules } from '../write-rules.ts';
import { execStep, logChanges, pruneChanges } from './statements.ts';

/** The channel every commit with changes notifies, so other instances' streams wake at once. */
export const CHANGES_CHANNEL = 'user_records_changes';

/** The change log is pruned at most this often by each instance (and twice per retention, for short ones). */
const CHANGES_PRUNE_INTERVAL_MS = 60_000;

const ignore = () => undefined;

interface Job {
  request: WriteRequest;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for PostgreSQL. The writes that arrive in one turn of the event loop, or while the
 * previous batch commits, run in call order in one transaction on one connection and share its
 * commit (one WAL flush). One instance's writes therefore commit in the order their ids were
 * given, as with SQLite. A write that fails makes the batch roll back; its writes then run again
 * in a transaction each, so only the failing write fails. Every promise settles after COMMIT and
 * after `onCommit` has seen the changes.
 *
 * Each transaction first locks the store_version row. That makes the write transactions of all
 * instances take turns, so ids and change versions are given in commit order everywhere: a reader
 * paging with `after` never misses a record that commits late with a smaller id.
 */
export class PostgresBatch {
  readonly #pool: Pool;
  /** Whether a failure is a lost connection, which a rerun cannot fix. */
  readonly #isConnectionFault: (error: unknown) => boolean;
  readonly #onCommit: (changes: Change[]) => void;
  readonly #rules = new WriteRules();
  readonly #retentionMs: number;
  #prunedAt = 0;
  #pending: Job[] = [];
  #idle: Promise<void> = Promise.resolve();
  #active = false;

  constructor(
    pool: Pool,
    isConnectionFault: (error: unknown) => boolean,
    onCommit: (changes: Change[]) => void,
    retentionMs: number,
  ) {
    this.#pool = pool;
    this.#retentionMs = retentionMs;
    this.#isConnectionFault = isConnectionFault;
    this.#onCommit = onCommit;
  }

  run(request: WriteRequest): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ request, resolve, reject });
      if (this.#active) return;
      this.#active = true;
      this.#idle = new Promise((done) => setImmediate(() => void this.#drain().finally(done)));
    });
  }

  /** Resolves when every queued write has settled. */
  whenIdle(): Promise<void> {
    return this.#idle;
  }

  async #drain(): Promise<void> {
    while (this.#pending.length > 0) {
      const jobs = this.#pending;
      this.#pending = [];
      await this.#commit(jobs);
    }
    this.#active = false;
  }

  async #commit(jobs: Job[]): Promise<void> {
    try {
      const values = await this.#transaction(jobs);
      jobs.forEach((job, i) => deliver(job, values[i]));
    } catch (error) {
      if (jobs.length === 1 || this.#isConnectionFault(error)) {
        for (const job of jobs) job.reject(error);
        return;
      }
      for (const job of jobs) {
        await this.#transaction([job]).then(([value]) => deliver(job, value), job.reject);
      }
    }
  }

  async #transaction(jobs: Job[]): Promise<unknown[]> {
    const client: PoolClient = await this.#pool.connect();
    // Out of the pool, a client has no listener for a connection that breaks (the server stopped,
    // an administrator ended the session); without one the 'error' event would end the process.
    // The query in flight fails as well, and its error is what this write reports.
    client.on('error', ignore);
    try {
      const [, locked] = (await client.query('BEGIN; SELECT version FROM store_version FOR UPDATE')) as unknown as [
        unknown,
        { rows: Array<{ version: string }> },
      ];
      const start = Number(locked.rows[0]?.version);
      let version = start;
      const values: unknown[] = [];
      const changes: Change[] = [];
      const at = new Date();
      for (const job of jobs) {
        const outcome = await runAwaiting(this.#rules.program(job.request, version), (step) => execStep(client, step));
        for (const made of outcome.changes ?? []) changes.push({ version: ++version, ...made, at });
        values.push(outcome.value);
      }
      // The log in the changes' own transaction; the version is ours, a safe integer: one round trip
      // sets it, wakes the other instances' streams (delivered at commit) and commits.
      if (changes.length > 0) await client.query(logChanges(changes));
      if (at.getTime() - this.#prunedAt >= Math.min(CHANGES_PRUNE_INTERVAL_MS, this.#retentionMs / 2)) {
        this.#prunedAt = at.getTime();
        await client.query(pruneChanges(this.#retentionMs));
      }
      await client.query(
        version === start
          ? 'COMMIT'
          : `UPDATE store_version SET version = ${version}; NOTIFY ${CHANGES_CHANNEL}; COMMIT`,
      );
      client.off('error', ignore);
      client.release();
      this.#onCommit(changes);
      return values;
    } catch (error) {
      // A lost connection is not asked to roll back (it would wait out another timeout): the pool
      // closes it, and so PostgreSQL rolls back. Nor is one that fails to roll back trusted again.
      const rolledBack =
        !this.#isConnectionFault(error) &&
        (await client.query('ROLLBACK').then(
          () => true,
          () => false,
        ));
      client.off('error', ignore);
      client.release(rolledBack ? undefined : (error as Error));
      throw error;
    }
  }
}

/** A write's answer, or its refusal at an end the service keeps. */
function deliver(job: Job, value: unknown): void {
  if (isAtEnd(value)) job.reject(new StoreAtEndError(value.atEnd));
  else job.resolve(value);
}
