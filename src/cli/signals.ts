/**
 * SIGINT, SIGTERM and SIGHUP while a command runs. Until a command's data is committed, a signal
 * ends it as it would anyway (nothing is stored: the database rolls the transaction back), after
 * removing the command's unfinished files. Once the commit has begun, a signal waits: the command
 * finishes, reports what it stored and exits 0, so that no script retries a stored import.
 */
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
type Signal = (typeof SIGNALS)[number];

const cleanups = new Set<() => void>();
let holding = false;
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
  if (holding) pending ??= signal;
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
 * The wait is over. `stored`: the command's data is committed, a signal that came meanwhile is
 * reported and otherwise ignored; not stored: it ends the command now.
 */
export function releaseSignals(stored: boolean): string | undefined {
  holding = false;
  const signal = pending;
  pending = undefined;
  if (signal === undefined) return undefined;
  if (!stored) end(signal);
  return `${signal} came while the data was being committed; it was stored, so the command finished first`;
}
