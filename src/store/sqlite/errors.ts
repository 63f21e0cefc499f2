import { SqliteError } from 'better-sqlite3';
import { StoreUnavailableError } from '../store.ts';

/**
 * Faults of the database file or the machine, not of the request: the client may retry later.
 * CORRUPT is among them: after an I/O error SQLite reports what it could not read as corruption,
 * though the file on disk may be sound (the writer reopens and checks it).
 */
const UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|CANTOPEN|READONLY|NOMEM|PROTOCOL|CORRUPT|NOTADB)/;

export function isUnavailable(error: unknown): error is InstanceType<typeof SqliteError> {
  return error instanceof SqliteError && UNAVAILABLE.test(error.code);
}

/** Another connection holds the lock this one waited for, past its busy timeout. */
export function isBusy(error: unknown): boolean {
  return error instanceof SqliteError && error.code.startsWith('SQLITE_BUSY');
}

/**
 * What a command says when another process (an import, a service's commit) kept the write lock
 * past DATABASE_TIMEOUT_MS: `while` names what it was waiting to do.
 */
export function lockHeld(path: string, busyTimeoutMs: number, while_: string): string {
  return `another process held the write lock of ${path} for longer than DATABASE_TIMEOUT_MS (${busyTimeoutMs} ms) ${while_}; try again once it is done, or raise DATABASE_TIMEOUT_MS`;
}

/** Faults after which the connection may hold a wrong picture of the file: reopen before trusting it. */
export function needsReopen(error: unknown): boolean {
  return error instanceof SqliteError && /^SQLITE_(IOERR|CORRUPT|NOTADB|CANTOPEN)/.test(error.code);
}

/** A database fault as StoreUnavailableError (503); anything else unchanged. */
export function asUnavailable(error: unknown): unknown {
  return isUnavailable(error)
    ? new StoreUnavailableError(`database unavailable: ${error.code}`, { cause: error })
    : error;
}
