import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, killStarted, startChild } from './child-server.ts';
import { pinCpus } from './cpu-pinning.ts';
import { runLoad } from './load.ts';
import { type PostgresCluster, seedPostgres, startPostgres } from './postgres.ts';
import { waitIdle } from './proc-stats.ts';
import { type TimeShare, summariseProfile } from './profile-summary.ts';
import { seedSqlite } from './seed-files.ts';
import { buildService } from './service-build.ts';
import { storeCounters } from './store-counters.ts';
import { type WorkloadName, workloadPlan } from './workloads.ts';
import { wrkOrExit } from './wrk.ts';

// Profiles the service, run as npm start runs it (the bundle), under the create, list-100k and
// read-one workloads, or GET /healthz (--workloads read,create,healthz to choose; the default is all but healthz):
// node --import tsx bench/profile.ts [--store sqlite|postgres] [--seconds 8] [--out /tmp/prof] [--top 25]
const ROOT = new URL('..', import.meta.url).pathname;
const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    seconds: { type: 'string', default: '8' },
    out: { type: 'string', default: '/tmp/prof' },
    top: { type: 'string', default: '25' },
    workloads: { type: 'string', default: 'create,list,read' },
  },
});
const seconds = Math.min(60, Math.max(1, Number(values.seconds)));
const top = Number(values.top);
const CASES: Array<{ workload: WorkloadName; records: number }> = [
  { workload: 'create' as const, records: 1_000 },
  { workload: 'list' as const, records: 100_000 },
  { workload: 'read' as const, records: 1_000 },
  { workload: 'healthz' as const, records: 1_000 },
].filter(({ workload }) => values.workloads.split(',').includes(workload));
const print = (text: string) => process.stdout.write(text);
const line = (entry: TimeShare, width: number) =>
  `  ${(entry.share * 100).toFixed(1).padStart(5)}%  ${entry.name.padEnd(width)} ${entry.where}\n`;

const wrk = wrkOrExit('profile', (text) => print(`${text}\n`));
const workDir = mkdtempSync(join(tmpdir(), 'user-records-profile-'));
// The bundle, not the source through tsx: a profile of source would count tsx's loader as the service's.
const service = buildService(ROOT, workDir);
let cluster: PostgresCluster | undefined;
process.once('exit', () => {
  killStarted();
  rmSync(workDir, { recursive: true, force: true });
});

/** A seeded database for one case: a fresh SQLite file, or the one PostgreSQL database refilled. */
async function database(workload: WorkloadName, records: number): Promise<string> {
  if (values.store !== 'postgres') {
    const file = join(workDir, `${workload}.db`);
    await seedSqlite(file, records);
    return file;
  }
  if (cluster === undefined) {
    const started = await startPostgres();
    if (typeof started === 'string') throw new Error(`no PostgreSQL: ${started}`);
    cluster = started;
  }
  await seedPostgres(cluster.url, records);
  return cluster.url;
}

async function profileCase(workload: WorkloadName, records: number, serverPrefix: string[]): Promise<void> {
  const profileDir = join(values.out ?? '/tmp/prof', `${values.store}-${workload}-${records}`);
  rmSync(profileDir, { recursive: true, force: true });
  mkdirSync(profileDir, { recursive: true });
  const databaseUrl = await database(workload, records);
  const port = await freePort();
  const server = await startChild(
    {
      argv: [process.execPath, '--cpu-prof', `--cpu-prof-dir=${profileDir}`, ...service.args],
      env: {
        PORT: String(port),
        HOST: '127.0.0.1',
        DATABASE_URL: databaseUrl,
        LOG_LEVEL: 'warn',
        WORKERS: '1',
        RATE_LIMIT: 'off',
      },
      cwd: ROOT,
      readyPath: '/healthz',
    },
    port,
    serverPrefix,
  );
  const before = await storeCounters(databaseUrl);
  const result = await runLoad({
    url: server.url,
    plan: workloadPlan(workload, records, 'query'),
    wrk,
    dir: workDir,
    connections: 10,
    warmupMs: 500,
    durationMs: seconds * 1000,
    minResponses: 1,
    maxDurationMs: seconds * 1000,
    pid: server.pid,
  });
  // The profile is written when the process exits after a graceful stop; give it time to finish.
  await waitIdle(server.pid);
  const after = await storeCounters(databaseUrl);
  await server.stop(30_000);
  print(`\n== ${values.store} ${workload} @ ${records} records: ${Math.round(result.requestsPerSecond)} req/s, `);
  print(`p99 ${result.p99Ms.toFixed(2)} ms, errors ${result.errors + result.non2xx}\n`);
  if (workload === 'create' && before !== undefined && after !== undefined) {
    // The records made in the run. (store_version counts changes, one per record, not transactions:
    // it cannot tell how many creates each commit carried.)
    print(`${after.records - before.records} records created\n`);
  }
  // Node names them CPU.<date>.<time>.<pid>.<thread>.<n>; thread 0 is the main one.
  const file = readdirSync(profileDir).find((name) => /\.\d+\.0\.\d+\.cpuprofile$/.test(name));
  if (file === undefined) return void print(`no profile written in ${profileDir}\n`);
  const summary = summariseProfile(join(profileDir, file), ROOT);
  const busy = (summary.totalMs - summary.idleMs) / 1000;
  print(`${join(profileDir, file)}: ${(summary.totalMs / 1000).toFixed(1)} s sampled, busy ${busy.toFixed(1)} s; `);
  print('shares are of busy time\nby area (self):\n');
  for (const entry of summary.areas.slice(0, 10)) print(line(entry, 0));
  print('top self time:\n');
  for (const entry of summary.self.slice(0, top)) print(line(entry, 40));
  print("the service's functions, inclusive (a hook's share holds the hooks it calls next):\n");
  for (const entry of summary.inclusive.slice(0, 12)) print(line(entry, 40));
  // The other threads: the SQLite writer and readers. Busy includes the time a thread waited in a
  // system call (an fsync), which the sampler counts where it was called.
  for (const other of readdirSync(profileDir).filter((name) => name !== file && name.endsWith('.cpuprofile'))) {
    const thread = summariseProfile(join(profileDir, other), ROOT);
    const heaviest = thread.inclusive[0];
    print(`thread ${other.split('.').at(-3)}: busy ${((thread.totalMs - thread.idleMs) / 1000).toFixed(1)} s`);
    print(
      heaviest === undefined
        ? '\n'
        : `, most in ${heaviest.name} ${heaviest.where} (${(heaviest.share * 100).toFixed(0)}%)\n`,
    );
  }
}

try {
  // The cluster starts before pinning, so PostgreSQL is not confined to the generator's CPU.
  if (values.store === 'postgres') await database('read', 0);
  const pinning = pinCpus(true);
  for (const { workload, records } of CASES) await profileCase(workload, records, pinning.serverPrefix);
} finally {
  await cluster?.stop();
}
