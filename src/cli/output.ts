import { once } from 'node:events';
import { createWriteStream, renameSync, rmSync } from 'node:fs';
import type { Writable } from 'node:stream';

/** Bad usage: exit code 2, with the reason. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** The command failed: exit code 1, with the reason in one line. */
export class CommandFailed extends Error {
  override name = 'CommandFailed';
}

/** A line for the operator, on standard error (standard output may carry the data). */
export function say(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** Writes with backpressure: waits while the stream's buffer is full, so memory stays flat. */
export async function put(out: Writable, chunk: string | Buffer): Promise<void> {
  if (!out.write(chunk)) await once(out, 'drain');
}

/**
 * A file written whole or not at all: to a temporary name beside it, renamed (after an fsync) once
 * complete, removed if the command fails. `-` or none: standard output.
 */
export interface Output {
  stream: Writable;
  /** Flushes and puts the file in place. */
  finish(): Promise<void>;
  /** Removes what was written. */
  discard(): void;
}

export function openOutput(file: string | undefined): Output {
  if (file === undefined || file === '-') {
    return {
      stream: process.stdout,
      finish: async () => {
        if (process.stdout.writableNeedDrain) await once(process.stdout, 'drain');
      },
      discard: () => undefined,
    };
  }
  const temporary = `${file}.partial-${process.pid}`;
  // flush: the file is fsync'd before it closes, so it is on disk when the command says it is done.
  // 1 MiB of buffer: the file is written while the next pages are read, not one small write at a time.
  const stream = createWriteStream(temporary, { flags: 'wx', flush: true, highWaterMark: 1 << 20 });
  const failure = new Promise<never>((_, reject) =>
    stream.once('error', (error) => reject(new CommandFailed(`cannot write ${file}: ${error.message}`))),
  );
  failure.catch(() => undefined);
  return {
    stream,
    finish: async () => {
      const closed = once(stream, 'close');
      stream.end();
      await Promise.race([failure, closed]);
      renameSync(temporary, file);
    },
    discard: () => {
      stream.destroy();
      rmSync(temporary, { force: true });
    },
  };
}
