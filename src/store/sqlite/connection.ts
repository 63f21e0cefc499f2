import { accessSync, constants, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { SqliteError } from 'better-sqlite3';
import { StoreOpenError } from '../store.ts';
import { migrate, refuseOthers } from './migrations.ts';
import { openBetterSqlite } from './native-objects.ts';

export interface ConnectionOptions {
  /** SQLite's own wait for a lock another connection holds; 0 on the event loop (waits are retried there). */
  busyTimeoutMs: number;
  /** Apply pending migrations (one connection per process does). */
  migrate?: boolean;
  /** Run SQLite's quick_check and refuse a damaged file: after a fault of the file, when the writer reopens it. */
  check?: boolean;
}

const reason = (error: unknown) => {
  const { code, message } = error as NodeJS.ErrnoException;
  const text = message.replace(/^[A-Z]+: /, '').replace(/, \w+ '.*'$/, '');
  return code === undefined ? text : `${text} (${code})`;
};

/**
 * Creates the folders of `path` one level at a time. (`mkdirSync(..., { recursive: true })` never
 * returns for a path under /proc on Node 20, so it is not used.)
 */
function makeFolders(path: string): void {
  const missing: string[] = [];
  let folder = dirname(resolve(path));
  for (;;) {
    try {
      if (!statSync(folder).isDirectory())
        throw new StoreOpenError(`${folder} is not a folder, so it cannot hold ${path}`);
      break;
    } catch (error) {
      if (error instanceof StoreOpenError) throw error;
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(folder) === folder) {
        throw new StoreOpenError(`cannot read the folder ${folder}: ${reason(error)}`);
      }
      missing.unshift(folder);
      folder = dirname(folder);
    }
  }
  for (const next of missing) {
    try {
      mkdirSync(next);
    } catch (error) {
      throw new StoreOpenError(`cannot create the folder ${next} for ${path}: ${reason(error)}`);
    }
  }
}

/** Refuses, before SQLite opens anything, a path it could only open read-only or not at all. */
function checkWritable(path: string): void {
  const folder = dirname(resolve(path));
  try {
    const stat = statSync(path);
    if (!stat.isFile()) throw new StoreOpenError(`${path} is not a file (a folder?); name the database file`);
    accessSync(path, constants.R_OK | constants.W_OK);
  } catch (error) {
    if (error instanceof StoreOpenError) throw error;
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new StoreOpenError(`cannot write the database file ${path}: ${reason(error)}`);
    }
  }
  try {
    // SQLite creates its -wal and -shm files beside the database.
    accessSync(folder, constants.W_OK);
  } catch (error) {
    throw new StoreOpenError(
      `cannot create files in ${folder} (SQLite keeps -wal and -shm files there): ${reason(error)}`,
    );
  }
}

/**
 * Opens (creating if needed) an SQLite database in WAL mode with synchronous=FULL: a commit is
 * fsync'd before it returns. Faults of the path or the file are StoreOpenError with the path and
 * the cause in one line.
 */
export function openConnection(path: string, options: ConnectionOptions): Database.Database {
  if (path !== ':memory:') {
    makeFolders(path);
    checkWritable(path);
  }
  let db: Database.Database;
  try {
    db = openBetterSqlite(path, { timeout: options.busyTimeoutMs });
  } catch (error) {
    throw new StoreOpenError(`cannot open the database file ${path}: ${reason(error)}`);
  }
  try {
    // Before anything is written to it (journal_mode = WAL is kept in the file's header).
    if (options.migrate === true) refuseOthers(db);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    // Freed space is zeroed: a deleted or corrected record leaves no copy of its values in the file.
    db.pragma('secure_delete = ON');
    // 32 MiB of page cache (the default is 2 MiB): reads of random records in a large table then
    // mostly skip the system call into the OS's cache. It is filled only as pages are read.
    db.pragma('cache_size = -32768');
    if (options.check === true) {
      const [first] = db.pragma('quick_check(1)', { simple: false }) as Array<{ quick_check: string }>;
      if (first?.quick_check !== 'ok') {
        throw new StoreOpenError(
          `the database file ${path} is damaged (SQLite quick_check: ${first?.quick_check}); restore it from a backup`,
        );
      }
    }
    if (options.migrate === true) migrate(db, options.busyTimeoutMs);
    return db;
  } catch (error) {
    db.close();
    if (error instanceof StoreOpenError) throw error;
    if (error instanceof SqliteError && error.code === 'SQLITE_NOTADB') {
      throw new StoreOpenError(`${path} is not an SQLite database file`);
    }
    if (error instanceof SqliteError)
      throw new StoreOpenError(`cannot use the database file ${path}: ${reason(error)}`);
    throw error;
  }
}
