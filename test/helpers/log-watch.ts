import { assertNotLogged } from './log-check.ts';

/** What a LogWatch saw over a run. */
export interface LogFigures {
  lines: number;
  /** Lines logged at level error (50) or above. */
  errors: string[];
  /** Lines logged at level warn (40). */
  warnings: number;
}

/**
 * Checks a long-running server's log lines as they come and then drops them, so a run of millions
 * of requests holds no more than a second's worth in memory. Every value the clients send starts
 * with one of `prefixes` (each at least 6 characters), so a line without any prefix holds none of them.
 */
export class LogWatch {
  readonly #logs: string[];
  readonly #values: readonly string[];
  readonly #timer: NodeJS.Timeout;
  #failure: unknown;
  readonly figures: LogFigures = { lines: 0, errors: [], warnings: 0 };

  constructor(logs: string[], prefixes: readonly string[]) {
    this.#logs = logs;
    this.#values = prefixes;
    this.#timer = setInterval(() => {
      try {
        this.check();
      } catch (error) {
        this.#failure ??= error;
      }
    }, 1000).unref();
  }

  /** Checks the lines logged since the last check, then drops them; throws on a match. */
  check(): void {
    const lines = this.#logs.splice(0);
    if (lines.length === 0) return;
    this.figures.lines += lines.length;
    for (const line of lines) {
      const level = Number(/"level":(\d+)/.exec(line)?.[1] ?? 0);
      if (level >= 50 && this.figures.errors.length < 20) this.figures.errors.push(line);
      else if (level === 40) this.figures.warnings++;
    }
    assertNotLogged(lines, this.#values);
  }

  /** A last check, and no more; throws the first match found on the way. */
  stop(): LogFigures {
    clearInterval(this.#timer);
    if (this.#failure !== undefined) throw this.#failure;
    this.check();
    return this.figures;
  }
}
