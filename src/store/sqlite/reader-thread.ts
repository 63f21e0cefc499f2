import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import type { GroupField } from '../../record/fields.ts';
import type { ListFilter, ListOrder } from '../store.ts';
import { isUnavailable, needsReopen } from './errors.ts';
import { openBetterSqlite } from './native-objects.ts';
import { ReadStatements } from './statements.ts';

/** A read that may take long: a listing other than a plain page, a count, or counts by group. */
export type ReadRequest =
  | { op: 'list'; filter: ListFilter; order?: ListOrder }
  | { op: 'count'; filter?: ListFilter }
  | { op: 'stats'; filter: ListFilter; group: GroupField | undefined; limit: number };

/** Main thread to reader: one read at a time. */
export interface ToReader {
  request: ReadRequest;
}

/** Why a read failed: `unavailable` for a fault of the file or the machine, `reopen` when the connection is suspect. */
export interface ReadFault {
  message: string;
  unavailable: boolean;
  reopen: boolean;
}

/** Reader to main thread: ready (or why not), then the outcome of each read, in order. */
export type FromReader =
  | { type: 'ready' }
  | { type: 'failed'; message: string }
  | { type: 'done'; ok: true; value: unknown; crowded: boolean }
  | { type: 'done'; ok: false; fault: ReadFault };

export interface ReaderData {
  path: string;
  /** SQLite's own wait for a lock: here it holds only this thread, never the event loop. */
  busyTimeoutMs: number;
  /** One Int32 the main thread sets to 1 when it gives up the read running (see `givenUp` below). */
  cancel: SharedArrayBuffer;
}

// A reader thread: its own read-only connection to the file, one read transaction per request, so
// a listing with several statements (a sort read group by group) sees one snapshot, and every read
// starts after the main thread asked for it, so it sees every write answered before.
const port = parentPort;
if (port === null) throw new Error('reader-thread.ts runs as a worker thread');
const send = (message: FromReader) => port.postMessage(message);
const { path, busyTimeoutMs, cancel } = workerData as ReaderData;
const cancelled = new Int32Array(cancel);

/**
 * Between statements, a read the main thread gave up (past its time) stops: SQLite cannot be
 * interrupted inside a statement, but a listing read as several (a sort read group by group) ends
 * after the one it is in, and the thread takes the next read.
 */
const givenUp = () => {
  if (Atomics.load(cancelled, 0) === 1) throw new Error('the read was given up');
};

/**
 * The niceness of a reader thread (Linux: per thread): when the cores are all busy, the event loop,
 * which answers every other request, gets them first, and a long listing waits.
 */
const NICENESS = 10;
try {
  // /proc/thread-self names this thread's own id; setpriority on it touches no other thread.
  setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), NICENESS);
} catch {
  // Not Linux, or not allowed: the thread reads at the process's priority.
}

let db: Database.Database;
let reads: ReadStatements;
try {
  db = openBetterSqlite(path, { readonly: true, fileMustExist: true, timeout: busyTimeoutMs });
  // As the main connection (connection.ts): pages read again stay in memory, filled only as they are read.
  db.pragma('cache_size = -32768');
  reads = new ReadStatements(db, givenUp);
  send({ type: 'ready' });
} catch (error) {
  send({ type: 'failed', message: (error as Error).message });
  port.close();
}

function read(request: ReadRequest): unknown {
  switch (request.op) {
    case 'list':
      return reads.list(request.filter, request.order);
    case 'count':
      return reads.count(request.filter);
    case 'stats':
      return reads.stats(request.filter, request.group, request.limit);
  }
}

port.on('message', ({ request }: ToReader) => {
  try {
    db.exec('BEGIN');
    const value = read(request);
    db.exec('COMMIT');
    // A thread whose connection holds STATEMENTS_KEPT listing statements asks to be replaced.
    send({ type: 'done', ok: true, value, crowded: reads.crowded });
  } catch (error) {
    try {
      if (db.inTransaction) db.exec('ROLLBACK');
    } catch {
      // The read failed already; the next one begins afresh (or the thread is replaced: `reopen`).
    }
    const unavailable = isUnavailable(error);
    const message = unavailable ? `database unavailable: ${error.code}` : (error as Error).message;
    send({ type: 'done', ok: false, fault: { message, unavailable, reopen: needsReopen(error) } });
  }
});
