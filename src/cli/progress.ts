import { say } from './output.ts';

/** How often a terminal's line is redrawn, and a counting phase's plain line written. */
const FRAME_MS = 200;
const LINE_INTERVAL_MS = 1000;
/** Cells of the bar on a terminal. */
const BAR = 20;
/** What a terminal shows of a phase whose time left is not known yet (or no longer: its count is done, its work not). */
const UNKNOWN = '…';
const SPINNER = ['|', '/', '-', '\\'];

interface Phase {
  name: string;
  /** Counted phases show rows (and a bar and the time left with a total); others only their elapsed time. */
  counted: boolean;
  total: number | undefined;
  started: number;
  rows: number;
  done: number;
}

/** Seconds, rounded up: a phase with work left never shows 0. */
export function duration(ms: number, round: (n: number) => number = Math.ceil): string {
  const s = round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor(s / 60) % 60).padStart(2, '0')}m`;
}

/** The time left of a counted phase: unknown until a second of it has run, and once its count is done (its work may not be). */
export function timeLeft(phase: { total?: number; done: number; started: number }, now: number): string {
  const spent = now - phase.started;
  if (phase.total === undefined || phase.done <= 0 || phase.done >= phase.total || spent < 1000) return UNKNOWN;
  return duration(((phase.total - phase.done) * spent) / phase.done);
}

/**
 * Progress of a long command on standard error, phase by phase (reading, building indexes,
 * syncing to disk...). On a terminal one line per phase, redrawn five times a second: a bar, rows,
 * rows/s and the time left for a counted phase, a spinner and the elapsed time for the others; the
 * line is kept, with the phase's duration, when the next phase starts. Otherwise plain lines: a
 * counted phase's a second, and one as each phase ends. Nothing with --quiet. A phase that is one
 * synchronous call (SQLite's index builds) blocks the redraws: its line shows from its start, its
 * duration at its end.
 */
export class Progress {
  readonly #command: string;
  readonly #tty: boolean;
  readonly #quiet: boolean;
  #phase: Phase | undefined;
  #timer: NodeJS.Timeout | undefined;
  #lastDraw = 0;
  #lastLine = 0;
  #frames = 0;

  constructor(command: string, options: { quiet: boolean }) {
    this.#command = command;
    this.#quiet = options.quiet;
    this.#tty = process.stderr.isTTY === true;
  }

  /**
   * The next phase; the one before ends. `count`: rows are counted (`update`), `total` is in the
   * unit `update`'s `done` counts (bytes of the input, or records); none: no bar, no estimate.
   */
  phase(name: string, options: { count?: boolean; total?: number } = {}): void {
    this.#end();
    if (this.#quiet) return;
    const now = performance.now();
    const counted = options.count === true || options.total !== undefined;
    this.#phase = { name, counted, total: options.total, started: now, rows: 0, done: 0 };
    this.#lastLine = now;
    if (this.#tty) {
      this.#draw(now);
      this.#timer = setInterval(() => this.#draw(performance.now()), FRAME_MS);
      this.#timer.unref();
    }
  }

  /** `rows` handled so far in this phase; `done` of its total (bytes read, say). */
  update(rows: number, done = rows): void {
    const phase = this.#phase;
    if (phase === undefined) return;
    phase.rows = rows;
    phase.done = done;
    const now = performance.now();
    // The timer draws too, but a loop that seldom yields would starve it.
    if (this.#tty && now - this.#lastDraw >= FRAME_MS) this.#draw(now);
    if (!this.#tty && now - this.#lastLine >= LINE_INTERVAL_MS) {
      this.#lastLine = now;
      process.stderr.write(`${this.#figures(phase, now)}\n`);
    }
  }

  /** A message of the command's (a bad row, say), on a line of its own above the progress line; --quiet too. */
  note(line: string): void {
    const drawn = this.#tty && this.#phase !== undefined;
    if (drawn) process.stderr.write('\r\u001b[K');
    say(line);
    if (drawn) this.#draw(performance.now());
  }

  /** The command's work is done: the last phase's line is kept (every plain run has one, however short). */
  finish(): void {
    this.#end();
  }

  /** A failure: the terminal's line is ended where it is, no plain line. */
  stop(): void {
    this.#stopTimer();
    if (this.#phase !== undefined && this.#tty) process.stderr.write('\n');
    this.#phase = undefined;
  }

  #stopTimer(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** The current phase's last line, with its duration. */
  #end(): void {
    this.#stopTimer();
    const phase = this.#phase;
    if (phase === undefined) return;
    this.#phase = undefined;
    const now = performance.now();
    const spent = now - phase.started;
    const took = spent < 60_000 ? `${(spent / 1000).toFixed(1)}s` : duration(spent, Math.round);
    const line = `${this.#figures(phase, now)} (${took})`;
    process.stderr.write(this.#tty ? `\r${this.#fit(line)}\u001b[K\n` : `${line}\n`);
  }

  /** What a plain line and a phase's last line say. */
  #figures(phase: Phase, now: number): string {
    const head = `${this.#command}: ${phase.name}`;
    if (!phase.counted) return head;
    const share =
      phase.total === undefined || phase.total === 0 ? '' : `, ${Math.floor((100 * phase.done) / phase.total)}%`;
    return `${head}: ${phase.rows} rows, ${rate(phase, now)} rows/s${share}`;
  }

  #draw(now: number): void {
    const phase = this.#phase;
    if (phase === undefined) return;
    this.#lastDraw = now;
    const elapsed = duration(now - phase.started, Math.floor);
    let text = `${this.#command}: ${phase.name}`;
    if (!phase.counted) {
      text += ` ${SPINNER[this.#frames++ % SPINNER.length]} ${elapsed}`;
    } else if (phase.total === undefined) {
      text += ` | ${phase.rows} rows | ${rate(phase, now)} rows/s | ${elapsed}`;
    } else {
      const share = phase.total === 0 ? 1 : Math.min(phase.done / phase.total, 1);
      const full = Math.round(share * BAR);
      text += ` [${'\u2588'.repeat(full)}${'\u2591'.repeat(BAR - full)}] ${Math.floor(share * 100)}%`;
      text += ` | ${phase.rows} rows | ${rate(phase, now)} rows/s | ${timeLeft(phase, now)} left`;
    }
    process.stderr.write(`\r${this.#fit(text)}\u001b[K`);
  }

  /** A line longer than the terminal would wrap, and the next redraw would start on its second row. */
  #fit(text: string): string {
    const columns = process.stderr.columns;
    return columns > 1 && text.length >= columns ? text.slice(0, columns - 1) : text;
  }
}

function rate(phase: Phase, now: number): number {
  return Math.round(phase.rows / Math.max((now - phase.started) / 1000, 0.001));
}
