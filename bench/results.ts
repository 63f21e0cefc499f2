import type { CliStart } from './cli-start.ts';
import type { FsyncLatency } from './fsync-latency.ts';
import type { CompressionRow } from './compression.ts';
import type { FullListing } from './full-listing.ts';
import type { LoadResult } from './load.ts';
import type { Dataset } from './seed-data.ts';
import type { SystemId } from './systems.ts';
import type { WorkloadName } from './workloads.ts';

/** One load run: a system at a record count under one workload. */
export interface RunRecord extends LoadResult {
  system: SystemId;
  records: number;
  workload: WorkloadName;
  /** 2 when the first run was disturbed by other processes and run again (the calmer one is kept). */
  attempts: number;
}

/** One start of a system at a record count, and what was measured outside the load runs. */
export interface StageRecord {
  system: SystemId;
  records: number;
  startupMs?: number;
  rssAtRestMB?: number;
  /** Wall-clock time of the whole stage: seeding, start, every measure, stop. */
  seconds?: number;
  /** Untimed load run after the start, before any measured workload (SystemSpec.serverWarmupMs). */
  serverWarmupMs?: number;
  fullListing?: FullListing & { expectedBytes?: number };
  /** What compression costs and saves (StageStep.compression). */
  compression?: CompressionRow[];
  /** Sanity checks of the answers; a failed one is printed with the results. */
  problems: string[];
}

export interface TargetResult {
  id: string;
  system: SystemId;
  /** Where the target applies: a workload, or what is measured outside the load runs, at a record count. */
  measure: WorkloadName | 'at rest' | 'full listing' | 'command line';
  records: number;
  description: string;
  /** The measured ratio or value, formatted. */
  measured: string;
  pass: boolean | undefined;
  note?: string;
}

export interface BenchResults {
  meta: {
    date: string;
    /** The commit measured (`git rev-parse HEAD`), and whether the tree held no uncommitted change. */
    commit: string;
    clean: boolean;
    mode: 'quick' | 'full';
    /** The systems of a narrowed run (`--only`); such a run is never the docs' record. */
    only?: string[];
    /** The workloads of a narrowed run (`--workloads`). */
    workloads?: string[];
    /** The seeded records: realistic (faker, many locales) or synthetic (`user<N>`, the worst case for search). */
    dataset?: Dataset;
    /** The load generator, e.g. `wrk 4.1.0, 1 thread`. */
    generator?: string;
    node: string;
    cpus: number;
    pinning: string;
    service: string;
    warmupMs: number;
    durationMs: number;
    minResponses: number;
    maxDurationMs: number;
    connections: number;
    totalSeconds: number;
    labels: Record<string, string>;
  };
  runs: RunRecord[];
  stages: StageRecord[];
  /** This disk's write + fdatasync latency, measured in the run (the bound of durable creates). */
  fsync?: FsyncLatency;
  /** The command line's start, beside Node's own. */
  cli?: CliStart;
  skipped: string[];
  targets: TargetResult[];
}
