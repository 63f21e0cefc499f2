import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';

export interface CliStart {
  /** Median wall-clock ms from spawn to exit, over `runs` runs of each, taken in turn. */
  nodeMs: number;
  versionMs: number;
  helpMs: number;
  runs: number;
}

const RUNS = 11;

/**
 * `user-records --version` and `--help` as a user runs them: `node bin/user-records.mjs` from the
 * layout `npm pack` makes (bin/, dist/cli/ built at pack time, no src/, so nothing is rebuilt),
 * built into `workDir`, beside `node -e 0`, Node's own start. Each is run under `prefix` (the
 * servers' core), in turn, so a busy moment costs all three alike.
 */
export function measureCliStart(root: string, workDir: string, prefix: string[]): CliStart {
  const dir = join(workDir, 'cli-package');
  mkdirSync(join(dir, 'bin'), { recursive: true });
  execFileSync(process.execPath, ['scripts/build.mjs', join(dir, 'dist/cli/user-records.mjs'), 'src/cli.ts'], {
    cwd: root,
    stdio: 'pipe',
  });
  copyFileSync(join(root, 'bin/user-records.mjs'), join(dir, 'bin/user-records.mjs'));
  copyFileSync(join(root, 'package.json'), join(dir, 'package.json'));
  // The installed package finds its dependencies in node_modules; these are the checkout's.
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  const commands = {
    nodeMs: ['-e', '0'],
    versionMs: [join(dir, 'bin/user-records.mjs'), '--version'],
    helpMs: [join(dir, 'bin/user-records.mjs'), '--help'],
  };
  const times: Record<keyof typeof commands, number[]> = { nodeMs: [], versionMs: [], helpMs: [] };
  for (let run = 0; run < RUNS; run++) {
    for (const [name, args] of Object.entries(commands) as Array<[keyof typeof commands, string[]]>) {
      const argv = [...prefix, process.execPath, ...args];
      const t0 = performance.now();
      const result = spawnSync(argv[0] as string, argv.slice(1), { cwd: workDir, stdio: 'pipe', timeout: 30_000 });
      if (result.status !== 0) throw new Error(`${argv.join(' ')} exited with ${result.status}: ${result.stderr}`);
      times[name].push(performance.now() - t0);
    }
  }
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
  return { nodeMs: median(times.nodeMs), versionMs: median(times.versionMs), helpMs: median(times.helpMs), runs: RUNS };
}
