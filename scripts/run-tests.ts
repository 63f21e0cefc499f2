// Runs every test file under test/ with Node's test runner, listed explicitly because Node 20's
// runner finds no .ts files by itself; `npm test -- test/users/contract.test.ts test/store/` runs only
// those files and folders.
// The PostgreSQL half needs a server: TEST_DATABASE_URL if given, else a throwaway cluster started
// here from the local PostgreSQL binaries and removed after. Without either, that half is skipped
// and says so; with TEST_POSTGRES_REQUIRED=1 (as in CI) it fails instead.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { hideCredentials } from '../src/config/load.ts';
import { sharedExtensions } from '../test/helpers/backends.ts';
import { findPostgresBin, type PostgresCluster, startPostgresCluster } from '../test/helpers/pg-cluster.ts';
import { buildTests } from './build-tests.ts';

const started = Date.now();

/** The test files under a folder, at any depth, in a stable order. */
const testFilesIn = (folder: string) =>
  readdirSync(folder, { recursive: true })
    .map(String)
    .filter((file) => file.endsWith('.test.ts'))
    .map((file) => join(folder, file))
    .sort();
// A folder given (`npm test -- test/store/`) stands for the test files under it.
const given = process.argv.slice(2);
/**
 * The files that take longest (wall time, `TEST_BY_FILE=1`), longest first. Files start in the
 * order given, CONCURRENCY at a time, so these go first: started last, one of them alone would hold
 * the run's end while the other slots sit idle. A file missing from this list only starts later.
 */
const LONGEST = [
  'test/service/package.test.ts',
  'test/changes/changes.test.ts',
  'test/cli/cli.test.ts',
  'test/ops/admin.test.ts',
  'test/store/sqlite-faults.test.ts',
  'test/ops/admin-views.test.ts',
  'test/ops/docs.test.ts',
  'test/store/pg-faults.test.ts',
  'test/changes/stream-limits.test.ts',
  'test/service/shutdown.test.ts',
  'test/service/upgrade.test.ts',
  'test/changes/filtered-stream.test.ts',
  'test/store/persistence.test.ts',
];
const rank = (file: string) => (LONGEST.includes(file) ? LONGEST.indexOf(file) : LONGEST.length);
const files = (
  given.length > 0
    ? given.flatMap((path) => (statSync(path).isDirectory() ? testFilesIn(path) : [path]))
    : testFilesIn('test')
).sort((a, b) => rank(a) - rank(b));
if (files.length === 0) {
  console.error('no test files found under test/');
  process.exit(1);
}

let cluster: PostgresCluster | undefined;
let postgres = process.env.TEST_DATABASE_URL || undefined;
if (postgres !== undefined) {
  console.log(`PostgreSQL half: runs against TEST_DATABASE_URL ${hideCredentials(postgres)}`);
} else if (findPostgresBin() !== undefined) {
  cluster = await startPostgresCluster();
  postgres = cluster.url;
  console.log(`PostgreSQL half: runs against a throwaway PostgreSQL ${cluster.version} cluster at ${cluster.url}`);
} else {
  console.log(
    'PostgreSQL half: SKIPPED: no TEST_DATABASE_URL and no PostgreSQL binaries (install postgresql, or set PG_BIN)',
  );
  if (process.env.TEST_POSTGRES_REQUIRED === '1') {
    console.error('TEST_POSTGRES_REQUIRED=1: the PostgreSQL half must run');
    process.exit(1);
  }
}

// Test files run side by side: most of their time is spent waiting on child processes, sockets and
// timers, not on a core, so four at a time finish sooner even on two cores. TEST_CONCURRENCY=1
// runs them one by one; TEST_BY_FILE=1 runs each in a runner of its own and prints what each cost.
const CONCURRENCY = Number(process.env.TEST_CONCURRENCY ?? 4);

/**
 * The runner of one test file under TEST_BY_FILE, run by `node -e` with the file as its argument:
 * its exit status is the runner's, and its last line of stderr the CPU seconds of the runner and
 * every process it waited for (children's user and system time from /proc), or "unknown".
 */
const MEASURED_RUN = `
const { spawnSync } = require('node:child_process');
const { readFileSync } = require('node:fs');
const run = spawnSync(process.execPath, ['--test', process.argv[1]], { stdio: 'inherit' });
let cpu = 'unknown';
try {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const ticks = stat.slice(stat.lastIndexOf(')') + 2).split(' ').slice(13, 15).map(Number);
  cpu = ((ticks[0] + ticks[1]) / 100).toFixed(2);
} catch {}
process.stderr.write('\\ncpu-seconds ' + cpu + '\\n');
process.exit(run.status ?? 1);
`;

// Before any test file runs, so that no test's schema holds pg_trgm (test/helpers/backends.ts).
if (postgres !== undefined) await sharedExtensions(postgres);

const stopCluster = async () => {
  const running = cluster;
  cluster = undefined;
  await running?.stop();
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => void stopCluster().finally(() => process.exit(130)));
}

// The server and command-line processes the tests start run bundles of src/, built here once
// (test/helpers/server.ts, test/helpers/cli.ts).
const bundle = '.tmp/test-run/server.mjs';
const cliBundle = '.tmp/test-run/cli.mjs';
// Emptied first: nothing of an earlier run's build is left to be run by mistake.
rmSync('.tmp/test-run', { recursive: true, force: true });
execFileSync(process.execPath, ['scripts/build.mjs', bundle], { stdio: 'inherit' });
execFileSync(process.execPath, ['scripts/build.mjs', cliBundle, 'src/cli.ts'], { stdio: 'inherit' });

// The test files themselves run from bundles too (scripts/build-tests.ts), each with
// test/helpers/built-threads.ts first.
const tests = await buildTests(files, '.tmp/test-run/tests', 'test/helpers/built-threads.ts');

const testEnv = {
  ...process.env,
  TEST_SERVER_BUNDLE: bundle,
  TEST_CLI_BUNDLE: cliBundle,
  ...(postgres === undefined ? {} : { TEST_DATABASE_URL: postgres }),
};
const code =
  process.env.TEST_BY_FILE === '1'
    ? await byFile(tests)
    : await exitOf(
        spawn(process.execPath, ['--test', `--test-concurrency=${CONCURRENCY}`, ...tests], {
          stdio: 'inherit',
          env: testEnv,
        }),
      );
await stopCluster();
console.log(`PostgreSQL half: ${postgres === undefined ? 'SKIPPED (see the first line)' : 'ran'}`);
console.log(timeTaken());
process.exit(code);

function exitOf(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => child.once('exit', (status) => resolve(status ?? 1)));
}

/**
 * TEST_BY_FILE=1: each test file in a runner process of its own, CONCURRENCY at a time, its output
 * kept and shown only when it fails; then a table of each file's wall time and the CPU of its
 * process and every process it waited for (from /proc), the costliest first: where the time goes.
 */
async function byFile(tests: readonly string[]): Promise<number> {
  const measured: Array<{ file: string; wall: number; cpu: number | undefined; code: number }> = [];
  const queue = [...tests];
  const one = async (test: string) => {
    const started = Date.now();
    // A Node process runs the file's runner and waits for it, then reports the CPU of everything it
    // waited for (/proc/self/stat, as timeTaken reads it) on its last line of stderr.
    const child = spawn(process.execPath, ['-e', MEASURED_RUN, test], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: testEnv,
    });
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const status = await exitOf(child);
    const reported = /\ncpu-seconds (\S+)\n?$/.exec(output);
    const cpu = reported === null || reported[1] === 'unknown' ? undefined : Number(reported[1]);
    const file = test.replace(/^.*\/tests\//, '').replace(/\.mjs$/, '.ts');
    measured.push({ file, wall: (Date.now() - started) / 1000, cpu, code: status });
    console.log(`${status === 0 ? 'ok' : 'FAILED'} ${file}`);
    if (status !== 0) console.log(output);
  };
  const worker = async () => {
    for (let test = queue.shift(); test !== undefined; test = queue.shift()) await one(test);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  measured.sort((a, b) => (b.cpu ?? b.wall) - (a.cpu ?? a.wall));
  console.log('\n  CPU s   wall s  file');
  for (const { file, wall, cpu, code } of measured) {
    console.log(
      `${(cpu?.toFixed(1) ?? '-').padStart(7)}  ${wall.toFixed(1).padStart(7)}  ${file}${code === 0 ? '' : '  FAILED'}`,
    );
  }
  if (measured.some((entry) => entry.cpu === undefined)) console.log('(CPU - : no /proc here; sorted by wall time)');
  return measured.some((entry) => entry.code !== 0) ? 1 : 0;
}

/**
 * The run's wall time and the CPU time of this process and every process it waited for (the test
 * processes, the servers and commands they ran, PostgreSQL): a figure that a busy machine moves
 * far less than the wall time (README.md, Testing).
 */
function timeTaken(): string {
  const wall = `${((Date.now() - started) / 1000).toFixed(0)} s wall`;
  if (!existsSync('/proc/self/stat')) return `time: ${wall}`;
  // Fields after the command's name: utime, stime, cutime, cstime are the 12th to 15th, in ticks of 1/100 s.
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const [user, system, childUser, childSystem] = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .slice(11, 15)
    .map((ticks) => Number(ticks) / 100) as [number, number, number, number];
  const cpu = user + system + childUser + childSystem;
  return `time: ${wall}, ${cpu.toFixed(0)} s CPU (${(user + childUser).toFixed(0)} s user, ${(system + childSystem).toFixed(0)} s system)`;
}
