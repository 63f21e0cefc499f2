/**
 * SIGINT, SIGTERM and SIGHUP while a command runs. Until a command's data is committed, a signal
 * ends it as it would anyway (nothing is stored: the database rolls the transaction back), after
 * removing the command's unfinished files. Once the commit has begun, a signal waits: the command
 * finishes, reports what it stored and exits 0, so that no script retries a stored import; a
 * signal after that is only said. A signal's handler runs when the event loop turns, which a long
 * stretch of work without a pause (the last batch, the commit) can put after the commit: the
 * release lets the loop turn first, so such a signal counts as having come while holding.
 */
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
type Signal = (typeof SIGNALS)[number];

const cleanups = new Set<() => void>();
let holding = false;
/** The command's data is stored: it only reports and exits from here. */
let stored = false;
let pending: Signal | undefined;
let installed = false;

function end(signal: Signal): void {
  for (const cleanup of cleanups) cleanup();
  cleanups.clear();
  for (const name of SIGNALS) process.removeListener(name, onSignal);
  // As the default action would have: the process ends by this signal (exit code 128 + its number).
  process.kill(process.pid, signal);
}

function onSignal(signal: Signal): void {
  // On standard error, as output.ts's say (which imports this module) writes.
  if (stored) process.stderr.write(`${signal} came after the data was stored; the command is finishing\n`);
  else if (holding) pending ??= signal;
  else end(signal);
}

function install(): void {
  if (installed) return;
  installed = true;
  for (const name of SIGNALS) process.on(name, onSignal);
}

/** Runs `cleanup` (synchronously) if a signal ends the command; the returned function forgets it. */
export function onInterrupt(cleanup: () => void): () => void {
  install();
  cleanups.add(cleanup);
  return () => cleanups.delete(cleanup);
}

/** From here a signal waits (the commit has begun: its outcome must be reported). */
export function holdSignals(): void {
  install();
  holding = true;
}

/**
 * The wait is over, once the event loop has turned (a signal that came meanwhile reaches onSignal
 * first). `stored`: the command's data is committed, a signal that came meanwhile is reported and
 * otherwise ignored, as are later ones; not stored: it ends the command now.
 */
export async function releaseSignals(done: boolean): Promise<string | undefined> {
  // Two turns: the first may end before the loop polls for signals (as when the command's code ran
  // before the loop started); the second comes after a poll, which hands any signal to onSignal.
  for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
  holding = false;
  stored = done;
  const signal = pending;
  pending = undefined;
  if (signal === undefined) return undefined;
  if (!done) end(signal);
  return `${signal} came while the data was being committed; it was stored, so the command finished first`;
}
