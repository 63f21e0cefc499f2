import type { CliStart } from './cli-start.ts';
import { type FsyncLatency, fsyncBound } from './fsync-latency.ts';
import type { RunRecord, StageRecord, TargetResult } from './results.ts';
import type { Dataset } from './seed-data.ts';
import type { SystemId } from './systems.ts';
import { QUERY_WORKLOADS, WORKLOAD_LABELS, type WorkloadName } from './workloads.ts';

/** A generator using this much of its core may be what limits the rate. */
export const GENERATOR_BOUND = 0.9;

const K1 = 1_000;
const K10 = 10_000;
const K100 = 100_000;
const M1 = 1_000_000;

/** The run of a system under a workload at a record count; ceiling A is measured once, at 1k. */
export function findRun(runs: RunRecord[], system: SystemId, workload: WorkloadName, records: number) {
  const at = system === 'ceiling-a' ? K1 : records;
  return runs.find((run) => run.system === system && run.workload === workload && run.records === at);
}

/** The run a workload is compared with: ceiling B for listings, ceiling A otherwise. */
export function ceilingOf(runs: RunRecord[], run: RunRecord): RunRecord | undefined {
  return run.workload === 'list'
    ? findRun(runs, 'ceiling-b', 'list', run.records)
    : findRun(runs, 'ceiling-a', run.workload, run.records);
}

/**
 * The run of a peer (bench/peers/) a run is compared with: the peer on the same database, SQLite
 * for the systems that have none; none for the peer's own runs.
 */
export function peerOf(runs: RunRecord[], run: RunRecord, peer: 'directus'): RunRecord | undefined {
  if (run.system.startsWith(`${peer}-`)) return undefined;
  const system = run.system === 'postgres' ? (`${peer}-postgres` as const) : (`${peer}-sqlite` as const);
  return findRun(runs, system, run.workload, run.records);
}

/**
 * The system's CPU time per answer in µs (server and database processes); for results written
 * before it was recorded, from the server's share of a core.
 */
export function cpuPerRequest(run: RunRecord): number | undefined {
  if (run.cpuPerRequestUs !== undefined) return run.cpuPerRequestUs;
  return run.serverCpu === undefined || run.requestsPerSecond === 0
    ? undefined
    : ((run.serverCpu + (run.databaseCpu ?? 0)) * 1e6) / run.requestsPerSecond;
}

/** How many times as cheap per request as `other` (its CPU per request over this run's): 0.5× is twice the CPU. */
export function cpuRatio(run: RunRecord, other: RunRecord): number | undefined {
  const mine = cpuPerRequest(run);
  const theirs = cpuPerRequest(other);
  return mine === undefined || theirs === undefined || mine === 0 ? undefined : theirs / mine;
}

const faults = (run: RunRecord) => run.errors + run.non2xx;
export const x = (ratio: number) => `${ratio >= 10 ? ratio.toFixed(0) : ratio.toFixed(2)}×`;

interface RatioTarget {
  id: string;
  workload: WorkloadName;
  records: number;
  /** The run divided into the service's; the same run at 1k for growth targets. */
  against: { system: SystemId; records: number; name: string };
  min: number;
  description: string;
  /** The CPU-per-request ratio must reach `min` too (it is shown in every case). */
  cpuToo?: boolean;
}

function ratioTarget(runs: RunRecord[], system: SystemId, t: RatioTarget): TargetResult {
  const base = { id: t.id, system, measure: t.workload, records: t.records, description: t.description };
  const mine = findRun(runs, system, t.workload, t.records);
  const other = findRun(runs, t.against.system, t.workload, t.against.records);
  if (mine === undefined || other === undefined) return { ...base, measured: 'not measured', pass: undefined };
  const ratio = mine.requestsPerSecond / other.requestsPerSecond;
  const cpu = cpuRatio(mine, other);
  const cpuText = cpu === undefined ? '' : `, ${x(cpu)} by CPU per request`;
  const cpuPass = t.cpuToo !== true || (cpu !== undefined && cpu >= t.min);
  const notes: string[] = [];
  if (faults(other) > 0) notes.push(`${t.against.name} had ${faults(other)} errors/non-2xx`);
  if (faults(mine) > 0) notes.push(`${faults(mine)} errors/non-2xx, so no pass`);
  const mineBound = mine.generatorCpu >= GENERATOR_BOUND;
  const otherBound = other.generatorCpu >= GENERATOR_BOUND;
  // A rate capped by the load generator is a floor for that system, which skews the ratio one way.
  if (mineBound && otherBound) notes.push('both runs at the load generator’s limit: the ratio says little');
  else if (otherBound) notes.push(`${t.against.name} at the load generator’s limit: the true ratio is lower`);
  else if (mineBound) notes.push('this run at the load generator’s limit: the true ratio is higher');
  return {
    ...base,
    measured: `${x(ratio)} ${t.against.name} by requests/s${cpuText}`,
    pass: ratio >= t.min && cpuPass && faults(mine) === 0,
    ...(notes.length > 0 ? { note: notes.join('; ') } : {}),
  };
}

function limitTarget(
  id: string,
  system: SystemId,
  measure: TargetResult['measure'],
  records: number,
  description: string,
  value: number | undefined,
  max: number,
  unit: string,
): TargetResult {
  const base = { id, system, measure, records, description };
  if (value === undefined) return { ...base, measured: 'not measured', pass: undefined };
  return { ...base, measured: `${value.toFixed(value < 10 ? 2 : value < 100 ? 1 : 0)} ${unit}`, pass: value < max };
}

export function short(records: number): string {
  return records >= M1 ? `${records / M1}M` : records >= K1 ? `${records / K1}k` : String(records);
}

/** The targets, for each user-records system that ran (SQLite's and PostgreSQL's differ where a network round trip to the database sets the pace). */
export function evaluateTargets(
  runs: RunRecord[],
  stages: StageRecord[],
  measured: { fsync?: FsyncLatency; cli?: CliStart; dataset?: Dataset } = {},
): TargetResult[] {
  const results: TargetResult[] = [];
  // Search and count targets are about what users see: realistic data; synthetic data is the worst case.
  const synthetic = measured.dataset === 'synthetic';
  const onRealistic = (target: TargetResult) => {
    if (synthetic && target.pass !== undefined) {
      target.pass = undefined;
      target.note = 'measured on synthetic data (user<N>), not the target’s realistic data';
    }
    return target;
  };
  for (const system of ['sqlite', 'postgres'] as const) {
    if (!stages.some((stage) => stage.system === system)) continue;
    const sqlite = system === 'sqlite';
    const ratio = (t: RatioTarget) => results.push(ratioTarget(runs, system, t));
    const ceilingA = { system: 'ceiling-a', records: K1, name: 'ceiling A' } as const;
    if (sqlite) {
      results.push(...durableTargets(runs, measured.fsync));
      ratio({
        id: 'T2',
        workload: 'create',
        records: K1,
        against: { system: 'naive', records: K1, name: 'naive' },
        min: 2,
        description: 'create ≥2× naive',
      });
    }
    const json = { system: 'json-server', records: K10, name: 'json-server' } as const;
    if (sqlite) {
      ratio({
        id: 'T3',
        workload: 'create',
        records: K10,
        against: json,
        min: 50,
        description: 'create ≥50× json-server at 10k',
      });
    } else {
      ratio({
        id: 'T13',
        workload: 'create',
        records: K10,
        against: json,
        min: 10,
        description: 'PostgreSQL create ≥10× json-server at 10k',
      });
    }
    const create1k = findRun(runs, system, 'create', K1);
    const p99 = limitTarget(
      'T4',
      system,
      'create',
      K1,
      'create p99 ≤10 ms at 10 connections',
      create1k?.p99Ms,
      10.000001,
      'ms',
    );
    if (create1k !== undefined && faults(create1k) > 0) p99.pass = false;
    results.push(p99);
    ratio({
      id: 'T5',
      workload: 'list',
      records: K100,
      against: { system: 'ceiling-b', records: K100, name: 'ceiling B' },
      min: 0.8,
      description: 'list all at 100k ≥0.8× ceiling B',
    });
    ratio({
      id: 'T6',
      workload: 'read',
      records: K1,
      against: ceilingA,
      min: sqlite ? 0.67 : 0.4,
      cpuToo: sqlite,
      description: sqlite
        ? 'read one ≥0.67× ceiling A by requests/s and by CPU per request'
        : 'read one ≥0.4× ceiling A by requests/s',
    });
    if (sqlite) {
      ratio({
        id: 'T14',
        workload: 'healthz',
        records: K1,
        against: ceilingA,
        min: 0.85,
        description: '/healthz ≥0.85× ceiling A by requests/s',
      });
      ratio({
        id: 'T15',
        workload: 'mix',
        records: K1,
        against: ceilingA,
        min: 0.5,
        description: '90/10 read/write ≥0.5× ceiling A',
      });
    }
    const at1k = { system, records: K1, name: 'of 1k' } as const;
    ratio({
      id: 'T7',
      workload: 'create',
      records: M1,
      against: at1k,
      min: 0.85,
      description: 'create at 1M within 15% of 1k',
    });
    ratio({
      id: 'T8',
      workload: 'read',
      records: M1,
      against: at1k,
      min: 0.85,
      description: 'read one at 1M within 15% of 1k',
    });
    // The queries of GET /users: each at 1M within 2× of its rate at 1k; a count and a search with bounds.
    QUERY_WORKLOADS.forEach((workload, i) => {
      const target = ratioTarget(runs, system, {
        id: `T${18 + i}`,
        workload,
        records: M1,
        against: at1k,
        min: 0.5,
        description: `${WORKLOAD_LABELS[workload]} at 1M within 2× of 1k`,
      });
      results.push(workload === 'search' || workload === 'count' ? onRealistic(target) : target);
    });
    for (const [id, workload, description, max] of [
      ['T27', 'count-city', 'a count of one city at 1M p99 <100 ms', 100],
      ['T34', 'stats-city', 'GET /users/stats?group=city (every city) at 1M p99 <100 ms', 100],
      ['T28', 'search', 'search page at 1M p99 <20 ms at 10 connections', 20],
      ['T31', 'count', 'page with count=exact at 1M p99 <20 ms at 10 connections', 20],
    ] as const) {
      const run = findRun(runs, system, workload, M1);
      const target = limitTarget(id, system, workload, M1, description, run?.p99Ms, max, 'ms');
      if (run !== undefined && faults(run) > 0) target.pass = false;
      results.push(workload === 'count-city' ? target : onRealistic(target));
    }
    const big = stages.find((stage) => stage.system === system && stage.records === M1);
    const listing = big?.fullListing;
    results.push(
      limitTarget('T9', system, 'at rest', M1, 'start-up <1 s with 1M records', big?.startupMs, 1000, 'ms'),
      limitTarget('T10', system, 'at rest', M1, 'RSS at rest <150 MB with 1M records', big?.rssAtRestMB, 150, 'MB'),
      limitTarget('T11', system, 'full listing', M1, 'full listing TTFB <100 ms', listing?.ttfbMs, 100, 'ms'),
      limitTarget('T12', system, 'full listing', M1, 'full listing peak RSS <300 MB', listing?.peakRssMB, 300, 'MB'),
    );
    if (listing !== undefined && listing.status !== 200) {
      for (const target of results.slice(-2)) target.pass = false;
    }
  }
  if (stages.some((stage) => stage.system === 'sqlite-tokens')) {
    const without = { system: 'sqlite', records: K1, name: 'without tokens' } as const;
    for (const [id, workload] of [
      ['T16', 'read'],
      ['T17', 'create'],
    ] as const) {
      results.push(
        ratioTarget(runs, 'sqlite-tokens', {
          id,
          workload,
          records: K1,
          against: without,
          min: 0.9,
          description: `${WORKLOAD_LABELS[workload]} with a bearer token on every request within 10% of without`,
        }),
      );
    }
  }
  if (measured.cli !== undefined) results.push(...cliTargets(measured.cli));
  return results;
}

/**
 * Creates on SQLite against what the disk allows: one fsync per batch of commits, so at most
 * `connections / fsync latency` creates a second; and twice the rate with 64 connections as with
 * 10, as group commits grow with the queue.
 */
function durableTargets(runs: RunRecord[], fsync: FsyncLatency | undefined): TargetResult[] {
  const at10 = findRun(runs, 'sqlite', 'create', K1);
  const at64 = findRun(runs, 'sqlite', 'create-64', K1);
  const base = { system: 'sqlite', records: K1 } as const;
  const bound: TargetResult = {
    ...base,
    id: 'T29',
    measure: 'create',
    description: 'create at 10 connections ≥0.8× the disk’s bound (10 / fsync latency)',
    measured: 'not measured',
    pass: undefined,
  };
  if (at10 !== undefined && fsync !== undefined) {
    const limit = fsyncBound(fsync, 10);
    const share = at10.requestsPerSecond / limit;
    bound.measured = `${x(share)} of ${Math.round(limit).toLocaleString('en-US')}/s (fsync median ${fsync.medianMs.toFixed(2)} ms)`;
    bound.pass = share >= 0.8 && faults(at10) === 0;
  }
  const scaling: TargetResult = {
    ...base,
    id: 'T30',
    measure: 'create-64',
    description: 'create at 64 connections ≥2× the rate at 10',
    measured: 'not measured',
    pass: undefined,
  };
  if (at10 !== undefined && at64 !== undefined) {
    const ratio = at64.requestsPerSecond / at10.requestsPerSecond;
    const share =
      fsync === undefined ? '' : ` (${x(at64.requestsPerSecond / fsyncBound(fsync, 64))} of the disk’s bound at 64)`;
    scaling.measured = `${x(ratio)} of 10 connections${share}`;
    scaling.pass = ratio >= 2 && faults(at64) === 0;
  }
  return [bound, scaling];
}

/** `user-records --version` and `--help`, run as a user runs them, at most 3× `node -e 0`. */
function cliTargets(cli: CliStart): TargetResult[] {
  return (
    [
      ['T32', '--version', cli.versionMs],
      ['T33', '--help', cli.helpMs],
    ] as const
  ).map(([id, flag, ms]) => ({
    id,
    system: 'sqlite',
    measure: 'command line',
    records: 0,
    description: `user-records ${flag} ≤3× node -e 0`,
    measured: `${x(ms / cli.nodeMs)} (${Math.round(ms)} ms against ${Math.round(cli.nodeMs)} ms)`,
    pass: ms <= 3 * cli.nodeMs,
  }));
}
