/**
 * Who decides a queued write: the writer thread, which runs it once it holds the write lock, or the
 * store's thread, which answers it 503 once its wait (DATABASE_TIMEOUT_MS, counted from when it was
 * asked) is over. Each write of a batch has one cell in memory both threads share; whichever claims
 * it first decides, so a write answered 503 is never run, and a write run is never answered 503 for
 * its wait (its transaction's outcome answers it).
 */
const WAITING = 0;
const TAKEN = 1;
const GIVEN_UP = 2;

/** A cell per write of a batch, each WAITING. */
export function claimCells(count: number): Int32Array {
  return new Int32Array(new SharedArrayBuffer(count * Int32Array.BYTES_PER_ELEMENT));
}

/** The writer's claim, under the write lock: true when it is to run the write. */
export function take(cells: Int32Array, index: number): boolean {
  return Atomics.compareExchange(cells, index, WAITING, TAKEN) === WAITING;
}

/** The store's claim, at the write's deadline: true when it is to answer 503 (nothing of it will run). */
export function giveUp(cells: Int32Array, index: number): boolean {
  return Atomics.compareExchange(cells, index, WAITING, GIVEN_UP) === WAITING;
}

/** Whether every write of a batch was given up: then the writer need not wait for the lock at all. */
export function allGivenUp(cells: Int32Array): boolean {
  for (let i = 0; i < cells.length; i++) if (Atomics.load(cells, i) !== GIVEN_UP) return false;
  return true;
}
