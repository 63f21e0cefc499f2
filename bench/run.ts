import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { killStarted } from './child-server.ts';
import { type CliStart, measureCliStart } from './cli-start.ts';
import { measureFsync } from './fsync-latency.ts';
import { pinCpus } from './cpu-pinning.ts';
import { printable, writeResults } from './output.ts';
import { type PeerChoice, peerSystems, preparePeers } from './peers.ts';
import { writeComparison } from './comparison-section.ts';
import { writeDocBlocks } from '../scripts/doc-blocks.ts';
import { plan } from './plan.ts';
import { type PostgresCluster, startPostgres } from './postgres.ts';
import type { BenchResults, RunRecord, StageRecord } from './results.ts';
import { dataset, shareSeedData, useSynthetic } from './seed-data.ts';
import { runStage } from './stage.ts';
import { buildService } from './service-build.ts';
import { type PeerId, type SystemId, systems } from './systems.ts';
import { evaluateTargets, short } from './targets.ts';
import type { WorkloadName } from './workloads.ts';
import { wrkOrExit } from './wrk.ts';

// npm run bench [-- --quick] [-- --no-pin] [-- --peers directus|none] [-- --only a,b] [-- --workloads x,y]
//   [-- --records N] [-- --synthetic] [-- --name NAME]:
// measures the disk's fsync latency and the command line's start, then starts every system in turn
// on 127.0.0.1, loads it with wrk (on its own core), prints one table with CPU per request, rates,
// ratios and PASS/FAIL per target, and writes bench/results/latest.json, latest.md and
// throughput.svg. `--peers directus` adds Directus (installed on first use into bench/peers/directus);
// without --peers it joins when already installed. `--only` runs only the named systems (ids as in
// systems.ts, and `cli` for the command line's start), `--workloads` only the named workloads (names
// as in workloads.ts), `--records` only one record count (ceiling A still runs, at 1k);
// `--synthetic` seeds `user<N>` records in place of realistic ones. Any of these writes
// bench/results/<NAME>.* (default `partial`), never latest.* or the docs' figures.
// Temp data lives in a mkdtemp dir, removed at the end.
const ROOT = new URL('..', import.meta.url).pathname;
const log = (line: string) => process.stdout.write(`${line}\n`);

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    'no-pin': { type: 'boolean', default: false },
    peers: { type: 'string' },
    only: { type: 'string' },
    workloads: { type: 'string' },
    records: { type: 'string' },
    synthetic: { type: 'boolean', default: false },
    name: { type: 'string' },
  },
});
const fail = (message: string): never => {
  process.stderr.write(`bench: ${message}\n`);
  process.exit(2);
};
const quick = flags.quick === true;
const peerChoice: PeerChoice = flags.peers === undefined ? 'installed' : flags.peers === 'none' ? 'none' : 'directus';
if (flags.peers !== undefined && !['directus', 'none'].includes(flags.peers)) {
  fail(`--peers takes directus or none, got ${JSON.stringify(flags.peers)}`);
}
const RECORD_COUNTS: Record<string, number> = { '1k': 1_000, '10k': 10_000, '100k': 100_000, '1m': 1_000_000 };
const records =
  flags.records === undefined ? undefined : (RECORD_COUNTS[flags.records.toLowerCase()] ?? Number(flags.records));
if (records !== undefined && !Object.values(RECORD_COUNTS).includes(records)) {
  fail(`--records takes 1k, 10k, 100k or 1M (or 1000 ... 1000000), got ${JSON.stringify(flags.records)}`);
}
const only = flags.only?.split(',').map((id) => id.trim()) as SystemId[] | undefined;
const workloads = flags.workloads?.split(',').map((name) => name.trim()) as WorkloadName[] | undefined;
const narrowed = only !== undefined || workloads !== undefined || records !== undefined || flags.synthetic === true;
const wrk = wrkOrExit('bench', (line) => process.stdout.write(`${line}\n`));
const outputName = narrowed ? (flags.name ?? 'partial') : quick ? 'quick' : 'latest';
// Far above a normal run (about 4 min quick, 9 to 10 min full, on 2 cores): only a hung system, or
// a machine busy with much else, can reach it.
// Directus adds about 5 min to a full run (10 more on its first run, which installs it).
const DEADLINE_MS = (quick ? 20 : 40) * 60_000 + (peerChoice === 'none' ? 0 : 20 * 60_000);

const workDir = mkdtempSync(join(tmpdir(), 'user-records-bench-'));
// The children (the baselines) read the seeded data from a file rather than make it again.
if (flags.synthetic === true) useSynthetic();
else shareSeedData(join(workDir, 'seed-data.json'));
let cluster: PostgresCluster | undefined;
const cleanUp = () => {
  killStarted();
  rmSync(workDir, { recursive: true, force: true });
};
process.once('exit', cleanUp);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`\n${signal}: stopping every server this bench started`);
    void (cluster?.stop() ?? Promise.resolve()).finally(() => process.exit(130));
  });
}
const watchdog = setTimeout(() => {
  log(`bench: still running after ${DEADLINE_MS / 60_000} min; giving up`);
  void (cluster?.stop() ?? Promise.resolve()).finally(() => process.exit(1));
}, DEADLINE_MS);
watchdog.unref();

/** PostgreSQL joins when a throwaway cluster can be started here. */
async function postgresUrl(skipped: string[]): Promise<string | undefined> {
  const started = await startPostgres();
  if (typeof started === 'string') {
    skipped.push(`user-records (PostgreSQL): ${started}`);
    return undefined;
  }
  cluster = started;
  return started.url;
}

/** `wrk 4.1.0` (its -v prints it, with a usage text, and exits 1). */
function wrkVersion(file: string): string {
  try {
    execFileSync(file, ['-v'], { encoding: 'utf8', stdio: 'pipe' });
  } catch (error) {
    const out = String((error as { stdout?: string }).stdout ?? '');
    const version = /wrk (?:debian\/)?(\d[\w.]*)/.exec(out)?.[1];
    if (version !== undefined) return `wrk ${version}`;
  }
  return 'wrk';
}

/** The commit the bench measures and whether the tree is clean; figures of a dirty tree say so. */
function gitState(): { commit: string; clean: boolean } {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
  try {
    return { commit: git('rev-parse', 'HEAD'), clean: git('status', '--porcelain') === '' };
  } catch {
    return { commit: 'unknown', clean: false };
  }
}

async function main(): Promise<void> {
  const began = performance.now();
  const { commit, clean } = gitState();
  const skipped: string[] = [];
  log(
    `user-records bench (${quick ? 'quick' : 'full'}) of ${commit.slice(0, 7)}${clean ? '' : ' with uncommitted changes'}: temp data in ${workDir}`,
  );
  // The cluster starts before this process is pinned, so PostgreSQL's own processes are not confined to one CPU.
  const service = buildService(ROOT, workDir);
  log(service.note);
  const pgUrl = await postgresUrl(skipped);
  // Before pinning: the first run installs Directus, whose native builds should have every core.
  const peers = await preparePeers(peerChoice, log, skipped, ROOT);
  for (const line of skipped) log(`skipped: ${line}`);
  const pinning = pinCpus(flags['no-pin'] !== true);
  log(pinning.note);
  log(
    `seeded records: ${dataset()}${dataset() === 'synthetic' ? ' (user<N>, the worst case for search)' : ' (faker, many locales)'}`,
  );
  const fsync = measureFsync(workDir);
  log(
    `disk: write + fdatasync of 4 KiB in ${workDir}: median ${fsync.medianMs.toFixed(2)} ms, p99 ${fsync.p99Ms.toFixed(2)} ms (${fsync.samples} writes)`,
  );
  let cli: CliStart | undefined;
  if (only === undefined || only.includes('cli' as SystemId)) {
    try {
      cli = measureCliStart(ROOT, workDir, pinning.serverPrefix);
      log(
        `command line: node -e 0 ${cli.nodeMs.toFixed(0)} ms, user-records --version ${cli.versionMs.toFixed(0)} ms, --help ${cli.helpMs.toFixed(0)} ms (medians of ${cli.runs})`,
      );
    } catch (error) {
      skipped.push(`the command line's start: ${(error as Error).message}`);
    }
  }
  const peerSpecs = peerSystems(peers, ROOT, pgUrl);
  const specs = [...systems(ROOT, service, pgUrl), ...peerSpecs];
  const { stages, timing } = plan(
    quick,
    peerSpecs.map((spec) => spec.id as PeerId),
    only,
    workloads,
    records,
  );
  const runs: RunRecord[] = [];
  const stageRecords: StageRecord[] = [];
  for (const stage of stages) {
    for (const step of stage.steps) {
      const spec = specs.find((s) => s.id === step.system);
      if (spec === undefined) continue;
      log(`[${short(stage.records)}] ${spec.label}`);
      try {
        const done = await runStage({ workDir, pinning, timing, wrk, log }, spec, stage.records, step);
        runs.push(...done.runs);
        stageRecords.push(done.stage);
        for (const problem of done.stage.problems) log(`  PROBLEM: ${problem}`);
      } catch (error) {
        const message = (error as Error).message;
        log(`  PROBLEM: ${message}`);
        stageRecords.push({ system: spec.id, records: stage.records, problems: [message] });
      }
    }
  }
  const results: BenchResults = {
    meta: {
      date: new Date().toISOString(),
      commit,
      clean,
      mode: quick ? 'quick' : 'full',
      ...(only === undefined ? {} : { only }),
      ...(workloads === undefined ? {} : { workloads }),
      dataset: dataset(),
      generator: `${wrkVersion(wrk)}, 1 thread`,
      node: process.version,
      cpus: cpus().length, // the machine's, not this pinned process's
      pinning: pinning.note,
      service: service.note,
      ...timing,
      totalSeconds: (performance.now() - began) / 1000,
      labels: Object.fromEntries(specs.map((spec) => [spec.id, spec.label])),
    },
    runs,
    stages: stageRecords,
    fsync,
    ...(cli === undefined ? {} : { cli }),
    skipped,
    targets: evaluateTargets(runs, stageRecords, { fsync, cli, dataset: dataset() }),
  };
  // Only a full run of every system is the record: it rewrites the results, then the figures of
  // docs/performance.md and the README, which are made from bench/results/latest.json.
  const files = writeResults(results, join(ROOT, 'bench/results'), outputName);
  if (outputName === 'latest') {
    files.push(...writeDocBlocks(['performance', 'performance-summary']).map((file) => join(ROOT, file)));
    if (peerSpecs.length > 0) {
      writeComparison(join(ROOT, 'docs/comparison.md'), results, 'bench/results/latest.json');
      files.push(join(ROOT, 'docs/comparison.md'));
    }
  }
  log(`\n${printable(results)}\n`);
  const perSystem = new Map<string, number>();
  for (const stage of stageRecords)
    perSystem.set(stage.system, (perSystem.get(stage.system) ?? 0) + (stage.seconds ?? 0));
  log(`time per system: ${[...perSystem].map(([id, s]) => `${id} ${Math.round(s)} s`).join(', ')}`);
  log(
    `written: ${files.map((file) => file.slice(ROOT.length)).join(', ')} (${Math.round(results.meta.totalSeconds)} s)`,
  );
}

try {
  await main();
} finally {
  await cluster?.stop();
  cleanUp();
}
