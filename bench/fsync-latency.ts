import { closeSync, fdatasyncSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export interface FsyncLatency {
  /** Writes timed, each 4 KiB appended then fdatasync'd, and their latencies. */
  samples: number;
  medianMs: number;
  p99Ms: number;
}

const BLOCK = Buffer.alloc(4096, 0x61);
const MAX_SAMPLES = 300;
const MAX_MS = 3_000;

/**
 * This disk's durable-write latency, as a commit pays it: 4 KiB appended to a file in `dir` (the
 * folder the databases are in) and fdatasync'd, as SQLite's WAL is at each commit with
 * synchronous=FULL. Bounded: at most 300 writes or 3 s. One commit per batch of creates, so
 * `connections / median` is the most creates a second a store that fsyncs each answer can make.
 */
export function measureFsync(dir: string): FsyncLatency {
  const file = join(dir, 'fsync-probe');
  const fd = openSync(file, 'w');
  const latencies: number[] = [];
  try {
    const began = performance.now();
    while (latencies.length < MAX_SAMPLES && performance.now() - began < MAX_MS) {
      const t0 = performance.now();
      writeSync(fd, BLOCK);
      fdatasyncSync(fd);
      latencies.push(performance.now() - t0);
    }
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
  latencies.sort((a, b) => a - b);
  const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? Number.NaN;
  return { samples: latencies.length, medianMs: at(0.5), p99Ms: at(0.99) };
}

/** Creates a second one commit per batch allows: `connections` creates per fsync. */
export function fsyncBound(fsync: FsyncLatency, connections: number): number {
  return (connections * 1000) / fsync.medianMs;
}
