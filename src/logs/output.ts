import { writeSync } from 'node:fs';
import { type DestinationStream, pino } from 'pino';
import { Counter } from 'prom-client';
import type { LogLevel } from '../config/load.ts';

/** Log lines dropped because standard output was not read fast enough; shown by /metrics. */
export const logLinesDropped = new Counter({
  name: 'log_lines_dropped_total',
  help: 'Log lines dropped because standard output was not read fast enough.',
  registers: [],
});

const MB = 1024 * 1024;
/**
 * The most one write carries. A write of at most PIPE_BUF (4096 on Linux) bytes to a pipe goes in
 * whole or not at all, so lines from several processes sharing one stdout (WORKERS) never interleave.
 */
const ATOMIC_WRITE = 4096;
/** How soon to try again when stdout is full. */
const RETRY_MS = 10;
/** How long the last lines may take to leave when the process exits. */
const EXIT_FLUSH_MS = 2000;

/**
 * Log lines on their way to a file descriptor, written whole: lines that arrive in one turn of the
 * event loop leave together, in writes of whole lines of at most ATOMIC_WRITE bytes, without blocking
 * (stdout is non-blocking, so a full pipe answers EAGAIN and the write is tried again shortly). Lines
 * waiting for a slow reader are held up to `maxBytes`; past that they are dropped and counted, and
 * once the backlog is written a warning says how many were lost.
 */
class LineOutput implements DestinationStream {
  readonly #fd: number;
  readonly #maxBytes: number;
  #lines: string[] = [];
  #sizes: number[] = [];
  /** The first line not yet taken into a write. */
  #head = 0;
  /** What a partial write left of the first pending lines. */
  #rest: Buffer | undefined;
  #bytes = 0;
  #scheduled = false;
  #unreported = 0;
  report: (dropped: number) => void = () => undefined;

  constructor(fd: number, maxBytes: number) {
    this.#fd = fd;
    this.#maxBytes = maxBytes;
    process.once('exit', () => this.#flushBeforeExit());
  }

  write(line: string): void {
    const size = Buffer.byteLength(line);
    if (this.#bytes + size > this.#maxBytes) {
      logLinesDropped.inc();
      this.#unreported++;
      return;
    }
    this.#lines.push(line);
    this.#sizes.push(size);
    this.#bytes += size;
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#flush()).unref();
    }
  }

  #flush(): void {
    this.#scheduled = false;
    if (!this.#writeAll()) {
      this.#scheduled = true;
      setTimeout(() => this.#flush(), RETRY_MS).unref();
      return;
    }
    if (this.#unreported > 0) {
      const dropped = this.#unreported;
      this.#unreported = 0;
      this.report(dropped);
    }
  }

  /** Writes what is pending; false when stdout is full and some is left. */
  #writeAll(): boolean {
    while (this.#rest !== undefined || this.#head < this.#lines.length) {
      const chunk = this.#rest ?? this.#nextChunk();
      let written: number;
      try {
        written = writeSync(this.#fd, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') {
          this.#rest = chunk;
          this.#release();
          return false;
        }
        // The reader is gone (EPIPE) or the descriptor broke: what waits can never be written.
        logLinesDropped.inc(lineCount(chunk) + this.#lines.length - this.#head);
        this.#discard();
        return true;
      }
      this.#bytes -= written;
      this.#rest = written < chunk.length ? chunk.subarray(written) : undefined;
    }
    this.#discard();
    return true;
  }

  /** Takes whole lines from the front, up to ATOMIC_WRITE bytes (one line at least). */
  #nextChunk(): Buffer {
    const start = this.#head;
    let size = 0;
    while (this.#head < this.#lines.length) {
      const next = this.#sizes[this.#head] as number;
      if (this.#head > start && size + next > ATOMIC_WRITE) break;
      size += next;
      this.#head++;
    }
    return Buffer.from(this.#lines.slice(start, this.#head).join(''));
  }

  /** Lets go of the lines already written, so a backlog that never quite drains holds only what waits. */
  #release(): void {
    if (this.#head < 1024 || this.#head * 2 < this.#lines.length) return;
    this.#lines = this.#lines.slice(this.#head);
    this.#sizes = this.#sizes.slice(this.#head);
    this.#head = 0;
  }

  #discard(): void {
    this.#lines = [];
    this.#sizes = [];
    this.#head = 0;
    this.#rest = undefined;
    this.#bytes = 0;
  }

  /** At exit no turn of the event loop is left: write what waits, waiting briefly on a full stdout. */
  #flushBeforeExit(): void {
    const deadline = Date.now() + EXIT_FLUSH_MS;
    const pause = new Int32Array(new SharedArrayBuffer(4));
    while (!this.#writeAll() && Date.now() < deadline) Atomics.wait(pause, 0, 0, RETRY_MS);
  }
}

function lineCount(chunk: Buffer): number {
  let count = 0;
  for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) count++;
  return Math.max(count, 1);
}

let output: LineOutput | undefined;

/**
 * Standard output for the logs, one per process; the first call's settings hold for the process.
 * None at level `silent`, which writes nothing. Reading `process.stdout` makes a pipe non-blocking
 * (for every process sharing it), so a full pipe never stalls the event loop.
 */
export function logOutput(level: LogLevel, bufferMb: number): DestinationStream | undefined {
  if (level === 'silent') return undefined;
  if (output === undefined) {
    void process.stdout;
    const lines = new LineOutput(1, bufferMb * MB);
    const reporter = pino({ level }, lines);
    lines.report = (dropped) =>
      reporter.warn({ droppedLines: dropped }, 'log lines dropped: standard output was not read fast enough');
    output = lines;
  }
  return output;
}
