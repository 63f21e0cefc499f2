import cliProgress from 'cli-progress';

/** How often a progress line is written when standard error is not a terminal. */
const LINE_INTERVAL_MS = 1000;

/**
 * Progress of a long command on standard error: a bar with rows, rows/s and the time left on a
 * terminal (when the total is known), plain lines once a second and at the end otherwise, nothing with --quiet.
 */
export class Progress {
  readonly #label: string;
  readonly #total: number | undefined;
  readonly #bar: cliProgress.SingleBar | undefined;
  #plain: boolean;
  readonly #started = performance.now();
  #lastLine = performance.now();
  #rows = 0;
  #done = 0;

  /** `total` is in the unit `update` counts (bytes of the input, or records); unknown: no bar, no estimate. */
  constructor(label: string, options: { total?: number; quiet: boolean; unit?: string }) {
    this.#label = label;
    this.#total = options.total;
    const tty = process.stderr.isTTY === true;
    this.#plain = !options.quiet && !tty;
    if (!options.quiet && tty) {
      this.#bar = new cliProgress.SingleBar(
        {
          stream: process.stderr,
          format:
            options.total === undefined
              ? `${label} {rows} rows | {rate} rows/s | {duration_formatted}`
              : `${label} [{bar}] {percentage}% | {rows} rows | {rate} rows/s | {eta_formatted} left`,
          hideCursor: true,
          etaBuffer: 50,
          fps: 5,
        },
        cliProgress.Presets.shades_classic,
      );
      this.#bar.start(options.total ?? 0, 0, { rows: 0, rate: 0 });
    }
  }

  /** `rows` handled so far; `done` of the total (bytes read, say). */
  update(rows: number, done = rows): void {
    this.#rows = rows;
    this.#done = done;
    const now = performance.now();
    this.#bar?.update(done, { rows, rate: this.#rate(now) });
    if (this.#plain && now - this.#lastLine >= LINE_INTERVAL_MS) {
      this.#lastLine = now;
      process.stderr.write(`${this.#line(now)}\n`);
    }
  }

  #rate(now: number): number {
    return Math.round(this.#rows / Math.max((now - this.#started) / 1000, 0.001));
  }

  #line(now: number): string {
    const share =
      this.#total === undefined || this.#total === 0 ? '' : `, ${Math.floor((100 * this.#done) / this.#total)}%`;
    return `${this.#label}: ${this.#rows} rows, ${this.#rate(now)} rows/s${share}`;
  }

  /** The command's work is done: the last frame, or the last line (so that every plain run has one, however short). */
  finish(): void {
    if (this.#plain) {
      this.#plain = false;
      process.stderr.write(`${this.#line(performance.now())}\n`);
    }
    this.stop();
  }

  /** Ends the bar where it is (a failure: no last line). */
  stop(): void {
    this.#plain = false;
    if (this.#bar !== undefined) {
      this.#bar.update(this.#done, { rows: this.#rows, rate: this.#rate(performance.now()) });
      this.#bar.stop();
    }
  }
}
