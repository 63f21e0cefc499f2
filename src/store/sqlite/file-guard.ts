import {
  accessSync,
  closeSync,
  constants,
  fstatSync,
  openSync,
  renameSync,
  rmSync,
  statfsSync,
  statSync,
} from 'node:fs';
import { dirname, resolve } from 'node:path';

/** Below this much free space the service reports itself not ready: the next writes may not fit. */
const MIN_FREE_BYTES = 1024 * 1024;

/**
 * Holds the database file and its write-ahead log open from the start, to notice when either is
 * deleted or replaced under the running service (`rm users.db`, a backup copied over it): SQLite
 * would go on writing to the unlinked files and every such write would be lost at the next start.
 */
export class FileGuard {
  readonly #path: string;
  readonly #files: Array<{ path: string; fd: number }>;

  constructor(path: string) {
    this.#path = path;
    this.#files = [path, `${path}-wal`].map((file) => ({ path: file, fd: openSync(file, 'r') }));
  }

  /** Why the files are not the ones opened any more, or undefined while they are. */
  problem(): string | undefined {
    return this.#check()?.problem;
  }

  /** Whether the database file itself is still in place, though its write-ahead log is gone. */
  onlyLogGone(): boolean {
    return this.#check()?.path === `${this.#path}-wal`;
  }

  #check(): { path: string; problem: string } | undefined {
    for (const { path, fd } of this.#files) {
      const problem = this.#fileProblem(path, fd);
      if (problem !== undefined) return { path, problem };
    }
    return undefined;
  }

  #fileProblem(path: string, fd: number): string | undefined {
    const opened = fstatSync(fd);
    if (opened.nlink === 0) return `${path} was deleted while the service was running`;
    let now;
    try {
      now = statSync(path);
    } catch {
      return `${path} was deleted while the service was running`;
    }
    if (now.ino !== opened.ino || now.dev !== opened.dev) {
      return `${path} was replaced by another file while the service was running`;
    }
    return undefined;
  }

  /**
   * Once the database file itself is gone, its write-ahead log is left at the path with nothing to
   * belong to: SQLite would replay it into whatever file is put there next (a backup copied in, or a
   * new empty database), mixing two databases. It is moved aside (and the index beside it deleted),
   * if it is still the log this service opened. Returns where it went.
   */
  setLogAside(stamp: string): string | undefined {
    const log = this.#files[1];
    if (log === undefined) return undefined;
    try {
      const atPath = statSync(log.path);
      const opened = fstatSync(log.fd);
      if (atPath.ino !== opened.ino || atPath.dev !== opened.dev) return undefined;
      const aside = `${log.path}.orphaned-${stamp}`;
      renameSync(log.path, aside);
      rmSync(`${this.#path}-shm`, { force: true });
      return aside;
    } catch {
      return undefined;
    }
  }

  /** Why the service should not take writes now (files gone, not writable, disk full), or undefined. */
  readiness(): string | undefined {
    const gone = this.problem();
    if (gone !== undefined) return gone;
    const folder = dirname(resolve(this.#path));
    try {
      accessSync(this.#path, constants.W_OK);
      accessSync(folder, constants.W_OK);
    } catch (error) {
      return `the database file ${this.#path} cannot be written: ${(error as Error).message}`;
    }
    const space = statfsSync(folder);
    const free = space.bavail * space.bsize;
    if (free < MIN_FREE_BYTES) return `the disk holding ${this.#path} is full (${free} bytes free)`;
    return undefined;
  }

  close(): void {
    for (const { fd } of this.#files) closeSync(fd);
    this.#files.length = 0;
  }
}
