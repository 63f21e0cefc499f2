import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A file system of the test's own, to make disks fill up, turn read-only or fail for real. */
export interface Mount {
  dir: string;
  /** Remounts read-only or read-write (only while no file on it is open for writing). */
  remount(mode: 'ro' | 'rw'): void;
  /** Makes every later I/O on it fail, as a dying disk does (ext4's shutdown ioctl; ext4 mounts only). */
  fail(): void;
  unmount(): void;
}

/** Why mounting cannot be done here (a skip reason), or false; CI must be able to. */
export function mountSkip(): string | false {
  if (process.getuid?.() === 0) return false;
  const why = 'mounting a test file system needs root';
  if (process.env.CI === 'true') throw new Error(`${why}, and CI runs as root`);
  return why;
}

function mount(args: string[], dir: string, cleanup: () => void): Mount {
  execFileSync('mount', [...args, dir], { stdio: 'pipe' });
  let mounted = true;
  return {
    dir,
    remount: (mode) => execFileSync('mount', ['-o', `remount,${mode}`, dir], { stdio: 'pipe' }),
    fail: () => {
      // EXT4_IOC_SHUTDOWN with EXT4_GOING_FLAGS_NOLOGFLUSH: from now on every read and write fails with EIO.
      const script = `import fcntl, os, struct; fd = os.open(${JSON.stringify(dir)}, os.O_RDONLY); fcntl.ioctl(fd, 0x8004587D, struct.pack('I', 2))`;
      execFileSync('python3', ['-c', script], { stdio: 'pipe' });
    },
    unmount: () => {
      if (mounted) execFileSync('umount', [dir], { stdio: 'pipe' });
      mounted = false;
      cleanup();
    },
  };
}

/** A small tmpfs (for a disk that fills up, or a remount read-only). */
export function mountTmpfs(sizeMb: number): Mount {
  const dir = mkdtempSync(join(tmpdir(), 'user-records-mnt-'));
  return mount(['-t', 'tmpfs', '-o', `size=${sizeMb}m`, 'tmpfs'], dir, () =>
    rmSync(dir, { recursive: true, force: true }),
  );
}

/** An ext4 file system in a file, mounted through a loop device (for a disk whose I/O fails). */
export function mountExt4(sizeMb: number): Mount {
  const work = mkdtempSync(join(tmpdir(), 'user-records-ext4-'));
  const image = join(work, 'disk.img');
  const dir = join(work, 'mnt');
  execFileSync('truncate', ['-s', `${sizeMb}M`, image]);
  execFileSync('mkfs.ext4', ['-q', image], { stdio: 'pipe' });
  execFileSync('mkdir', [dir]);
  return mount(['-o', 'loop', image], dir, () => rmSync(work, { recursive: true, force: true }));
}
