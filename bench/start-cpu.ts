// What one start costs in CPU and memory, the bundles of this work tree beside those of an earlier
// commit:
//   node --import tsx bench/start-cpu.ts REF [--runs 7]
// REF's src/ is taken with `git archive` into a temp dir and built there with its own
// scripts/build.mjs, this work tree's into the same temp dir, both using the checkout's node_modules.
// For each, taken in turn so that a busy moment costs both alike: the server bundle on an empty
// SQLite file until its "Server listening" line (CPU of its main thread and of the whole process,
// and its RSS, read then), and `user-records export` of that file with the command line's bundle,
// to its exit (the same, read as it exits, with its peak RSS). Prints the medians.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { cpuSeconds, statusMB } from './proc-stats.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const { values, positionals } = parseArgs({
  options: { runs: { type: 'string', default: '7' } },
  allowPositionals: true,
});
const RUNS = Number(values.runs);
const [REF] = positionals;
if (REF === undefined || !(RUNS >= 1)) {
  console.error('usage: node --import tsx bench/start-cpu.ts REF [--runs N]');
  process.exit(2);
}

interface Sample {
  mainMs: number;
  processMs: number;
  rssMB: number;
}

/** Builds the server's and the command line's bundles of the tree at `dir` into `out`. */
function buildAt(dir: string, out: string): { server: string; cli: string } {
  const server = join(out, 'server.mjs');
  const cli = join(out, 'cli', 'user-records.mjs');
  execFileSync(process.execPath, ['scripts/build.mjs', server], { cwd: dir, stdio: 'inherit' });
  execFileSync(process.execPath, ['scripts/build.mjs', cli, 'src/cli.ts'], { cwd: dir, stdio: 'inherit' });
  // The bundles find what they leave in node_modules from their folder.
  if (dir === ROOT) symlinkSync(join(ROOT, 'node_modules'), join(out, 'node_modules'));
  return { server, cli };
}

/** Starts the server's bundle, reads what it used at "Server listening", then stops it. */
async function serverStart(bundle: string, env: NodeJS.ProcessEnv): Promise<Sample> {
  const child = spawn(process.execPath, [bundle], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const pid = child.pid as number;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let sample: Sample | undefined;
  for await (const line of createInterface({ input: child.stdout })) {
    if (line.includes('Server listening')) {
      const [main, all, rss] = [cpuSeconds(pid, pid), cpuSeconds(pid), statusMB(pid, 'VmRSS')];
      if (main !== undefined && all !== undefined && rss !== undefined) {
        sample = { mainMs: main * 1000, processMs: all * 1000, rssMB: rss };
      }
      break;
    }
  }
  child.kill('SIGTERM');
  await exited;
  if (sample === undefined) throw new Error(`${bundle} ended before it listened`);
  return sample;
}

/**
 * Preloaded into the command's process (--import): as it exits, writes what it used to the file
 * named by START_CPU_OUT. CPU times are in USER_HZ, which Linux fixes at 100 for user space.
 */
const PROBE = `import { readFileSync, writeFileSync } from 'node:fs';
const cpuMs = (path) => {
  const stat = readFileSync(path, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
process.on('exit', () => {
  const peak = /^VmHWM:\\s+(\\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'));
  const sample = {
    mainMs: cpuMs(\`/proc/self/task/\${process.pid}/stat\`),
    processMs: cpuMs('/proc/self/stat'),
    rssMB: (Number(peak[1]) * 1024) / 1e6,
  };
  writeFileSync(process.env.START_CPU_OUT, JSON.stringify(sample));
});
`;

function cliExport(bundle: string, env: NodeJS.ProcessEnv, probe: string, out: string): Sample {
  const result = spawnSync(process.execPath, ['--import', probe, bundle, 'export'], {
    env: { ...env, START_CPU_OUT: out },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  if (result.status !== 0) throw new Error(`export exited with ${result.status}: ${result.stderr}`);
  return JSON.parse(readFileSync(out, 'utf8')) as Sample;
}

const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] as number;

const work = mkdtempSync(join(tmpdir(), 'start-cpu-'));
try {
  const old = join(work, 'old');
  mkdirSync(old);
  execFileSync('sh', ['-c', `git archive ${REF} | tar -x -C ${old}`], { cwd: ROOT });
  // Its build needs esbuild and the admin page's packages.
  symlinkSync(join(ROOT, 'node_modules'), join(old, 'node_modules'));
  const builds = { [REF]: buildAt(old, join(old, 'out')), 'this tree': buildAt(ROOT, join(work, 'new')) };
  const probe = join(work, 'probe.mjs');
  const out = join(work, 'probe.json');
  writeFileSync(probe, PROBE);
  const env = { ...process.env, DATABASE_URL: join(work, 'users.db'), HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info' };
  // Not counted: the first start, which makes the empty database, and a first export of each.
  for (const build of Object.values(builds)) {
    await serverStart(build.server, env);
    cliExport(build.cli, env, probe, out);
  }
  const samples = Object.fromEntries(
    Object.keys(builds).map((name) => [name, { server: [] as Sample[], cli: [] as Sample[] }]),
  );
  for (let run = 0; run < RUNS; run++) {
    for (const [name, build] of Object.entries(builds))
      samples[name]?.server.push(await serverStart(build.server, env));
    for (const [name, build] of Object.entries(builds)) samples[name]?.cli.push(cliExport(build.cli, env, probe, out));
  }
  const m = (list: Sample[], key: keyof Sample) => median(list.map((sample) => sample[key])).toFixed(0);
  console.log(`medians of ${RUNS} starts each: CPU in ms, memory in MB`);
  console.log(
    '| bundles | serve: main thread | serve: process | serve: RSS | export: main thread | export: process | export: peak RSS |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const [name, { server, cli }] of Object.entries(samples)) {
    const row = [
      m(server, 'mainMs'),
      m(server, 'processMs'),
      m(server, 'rssMB'),
      m(cli, 'mainMs'),
      m(cli, 'processMs'),
      m(cli, 'rssMB'),
    ];
    console.log(`| ${name} | ${row.join(' | ')} |`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
