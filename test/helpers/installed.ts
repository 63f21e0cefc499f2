// The package as `npm pack` makes it, installed elsewhere and run from there (test/service/package.test.ts).
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

const ROOT = new URL('../..', import.meta.url).pathname;

/**
 * Runs a command with the output kept for the failure message; throws with it when the command
 * fails or runs past `timeoutMs`.
 */
export function run(
  command: string,
  args: readonly string[],
  options: { cwd: string; env?: Record<string, string>; timeoutMs?: number },
): string {
  try {
    return execFileSync(command, args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: options.timeoutMs ?? 600_000,
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (error) {
    const { stdout, stderr, signal, status } = error as NodeJS.ErrnoException & {
      stdout?: string;
      stderr?: string;
      signal?: string;
      status?: number;
    };
    const how =
      signal === 'SIGTERM' ? `ran past ${options.timeoutMs ?? 600_000} ms` : `failed (${signal ?? `exit ${status}`})`;
    throw new Error(`${command} ${args.join(' ')} ${how}:\n${stdout ?? ''}\n${stderr ?? ''}`, { cause: error });
  }
}

/**
 * A copy of the repository as a checkout has it (tracked files, and new ones not ignored) in
 * `dir`, so that packing it leaves the working tree's dist/ alone.
 */
export function copyCheckout(dir: string): void {
  const files = run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT })
    .split('\0')
    .filter((file) => file !== '');
  for (const file of files) {
    let stats;
    try {
      stats = statSync(join(ROOT, file));
    } catch {
      continue; // deleted in the working tree, not yet in the index
    }
    if (!stats.isFile()) continue;
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    copyFileSync(join(ROOT, file), join(dir, file));
  }
}

/** Whether git can list the repository's files (it cannot in a copy without .git). */
export function gitAvailable(): boolean {
  try {
    run('git', ['rev-parse', '--is-inside-work-tree'], { cwd: ROOT });
    return true;
  } catch {
    return false;
  }
}

/**
 * better-sqlite3's compiled module, copied from the repository's node_modules into an install made
 * with scripts skipped: the same version, built by the same Node for this machine, in place of the
 * minute or two its build from source takes.
 */
export function copyNativeModule(modules: string): void {
  const relative = 'better-sqlite3/build/Release/better_sqlite3.node';
  const wanted = JSON.parse(
    run('node', ['-p', 'JSON.stringify(require("./package.json").version)'], {
      cwd: join(modules, 'better-sqlite3'),
    }),
  ) as string;
  const ours = JSON.parse(
    run('node', ['-p', 'JSON.stringify(require("./package.json").version)'], {
      cwd: join(ROOT, 'node_modules', 'better-sqlite3'),
    }),
  ) as string;
  if (wanted !== ours) throw new Error(`the install has better-sqlite3 ${wanted}, the repository ${ours}`);
  mkdirSync(dirname(join(modules, relative)), { recursive: true });
  copyFileSync(join(ROOT, 'node_modules', relative), join(modules, relative));
}

/** Every file and folder under `dir` with its size and modification time, to compare before and after a run. */
export function listing(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .map((entry) => {
      const path = join(entry.parentPath, entry.name);
      const stats = statSync(path, { throwIfNoEntry: false });
      return `${path.slice(dir.length)} ${stats?.size ?? 'gone'} ${stats?.mtimeMs ?? ''}`;
    })
    .sort();
}
