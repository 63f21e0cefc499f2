import { once } from 'node:events';
import { createWriteStream, lstatSync, openSync, realpathSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Writable } from 'node:stream';
import { onInterrupt } from './signals.ts';

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
  /** Takes back a file already put in place (a regular file; a pipe or device keeps what it got). */
  withdraw(): void;
}

const REASONS: Record<string, string> = {
  ENOENT: 'its folder does not exist',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'the disk quota is used up',
  EISDIR: 'it is a directory',
  ENOTDIR: 'a part of its path is not a directory',
};

/** Why `file` cannot be written, in words, naming the file given rather than a temporary one. */
function cannotWrite(file: string, error: unknown): CommandFailed {
  const code = (error as NodeJS.ErrnoException).code;
  const reason = code === undefined ? (error as Error).message : `${REASONS[code] ?? 'failed'} (${code})`;
  return new CommandFailed(`cannot write ${file}: ${reason}`);
}

/**
 * Where a FILE argument's bytes go. A regular file (or a new one) is written beside itself and
 * renamed into place; through a symbolic link, beside the file it points to, so the link stays. A
 * pipe or a character device (`/dev/stdout`, a FIFO) is written into directly: it cannot be
 * replaced, and must not be. Anything else is refused before any work is done.
 */
export function outputTarget(file: string): { path: string; direct: boolean } {
  let stat;
  try {
    stat = statSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw cannotWrite(file, error);
    const link = (() => {
      try {
        return lstatSync(file).isSymbolicLink();
      } catch {
        return false;
      }
    })();
    if (link) throw new CommandFailed(`cannot write ${file}: it is a symbolic link to a file that does not exist`);
    return { path: file, direct: false };
  }
  if (stat.isFile()) return { path: realpathSync(file), direct: false };
  if (stat.isFIFO() || stat.isCharacterDevice()) return { path: file, direct: true };
  const what = stat.isDirectory() ? 'a directory' : 'not a file, a pipe or a character device';
  throw new CommandFailed(`cannot write ${file}: it is ${what}`);
}

export function openOutput(file: string | undefined): Output {
  if (file === undefined || file === '-') {
    return {
      stream: process.stdout,
      finish: async () => {
        if (process.stdout.writableNeedDrain) await once(process.stdout, 'drain');
      },
      discard: () => undefined,
      withdraw: () => undefined,
    };
  }
  const target = outputTarget(file);
  if (target.direct) {
    const stream = createWriteStream(target.path, { flags: 'w', highWaterMark: 1 << 20 });
    const failure = new Promise<never>((_, reject) =>
      stream.once('error', (error) => reject(cannotWrite(file, error))),
    );
    failure.catch(() => undefined);
    return {
      stream,
      finish: async () => {
        const closed = once(stream, 'close');
        stream.end();
        await Promise.race([failure, closed]);
      },
      discard: () => stream.destroy(),
      withdraw: () => undefined,
    };
  }
  const temporary = join(dirname(target.path), `${basename(target.path)}.partial-${process.pid}`);
  // Opened now, so that a folder that does not exist or cannot be written is said before any work.
  let fd: number;
  try {
    fd = openSync(temporary, 'wx');
  } catch (error) {
    throw cannotWrite(file, error);
  }
  const forget = onInterrupt(() => rmSync(temporary, { force: true }));
  // flush: the file is fsync'd before it closes, so it is on disk when the command says it is done.
  // 1 MiB of buffer: the file is written while the next pages are read, not one small write at a time.
  const stream = createWriteStream(temporary, { fd, flush: true, highWaterMark: 1 << 20 });
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
      try {
        renameSync(temporary, target.path);
      } catch (error) {
        throw cannotWrite(file, error);
      } finally {
        forget();
      }
    },
    discard: () => {
      stream.destroy();
      rmSync(temporary, { force: true });
      forget();
    },
    withdraw: () => rmSync(target.path, { force: true }),
  };
}
