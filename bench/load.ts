import { join } from 'node:path';
import { cpuSeconds, machineBusySeconds, treeCpuSeconds } from './proc-stats.ts';
import { type RequestPlan, runWrk, type WrkResult } from './wrk.ts';

export interface LoadOptions {
  url: string;
  /** What to send (workloads.ts makes it). */
  plan: RequestPlan;
  /** wrk's path (wrk.ts finds it) and a folder for its plan file. */
  wrk: string;
  dir: string;
  connections: number;
  /** Run but not measured, so connections, JIT and caches settle first; its rate sets the window below. */
  warmupMs: number;
  durationMs: number;
  /** A slow workload is measured longer, up to maxDurationMs, to get this many responses. */
  minResponses: number;
  maxDurationMs: number;
  /** The server's PID, to read its CPU time (with its threads and any processes under it). */
  pid: number;
  /** Processes doing the system's work besides the server (PostgreSQL's), read at each end of the window. */
  helperPids?: () => number[];
}

export interface LoadResult {
  /** CPU time of the system (server and database processes) per answer in the window, in µs. */
  cpuPerRequestUs: number | undefined;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses counted in the measured window, their mean size in bytes (headers included), and the window's length. */
  responses: number;
  meanResponseBytes: number;
  windowMs: number;
  /** Socket errors (connect, read, write) and timeouts, warm-up included. */
  errors: number;
  timeouts: number;
  /** Responses other than 2xx, warm-up included. */
  non2xx: number;
  statusCodes: Record<string, number>;
  /** Cores used in the measured window by the server, its database processes, the generator (wrk), and everything else. */
  serverCpu: number | undefined;
  databaseCpu: number | undefined;
  generatorCpu: number;
  otherCpu: number | undefined;
}

// A request not answered within this is counted as a timeout (an error).
const REQUEST_TIMEOUT_S = 20;

interface Counters {
  at: number;
  server: number | undefined;
  helpers: Map<number, number>;
  machine: number | undefined;
}

function snapshot(pid: number, helperPids: () => number[]): Counters {
  const helpers = new Map<number, number>();
  for (const helper of helperPids()) {
    const seconds = cpuSeconds(helper);
    if (seconds !== undefined) helpers.set(helper, seconds);
  }
  return { at: performance.now(), server: treeCpuSeconds(pid), helpers, machine: machineBusySeconds() };
}

/** CPU seconds the helpers used between two snapshots, over the processes seen in both. */
function helperSeconds(start: Counters, end: Counters): number | undefined {
  if (end.helpers.size === 0) return undefined;
  let total = 0;
  for (const [pid, seconds] of end.helpers) total += seconds - (start.helpers.get(pid) ?? seconds);
  return total;
}

function summarise(wrk: WrkResult, start: Counters, end: Counters) {
  const seconds = (end.at - start.at) / 1000;
  const server = start.server === undefined || end.server === undefined ? undefined : end.server - start.server;
  const database = helperSeconds(start, end);
  const machine =
    start.machine === undefined || end.machine === undefined ? undefined : (end.machine - start.machine) / seconds;
  const generator = wrk.cpuSeconds / seconds;
  const share = (cpu: number | undefined) => (cpu === undefined ? undefined : cpu / seconds);
  return {
    cpuPerRequestUs:
      server === undefined || wrk.requests === 0 ? undefined : ((server + (database ?? 0)) * 1e6) / wrk.requests,
    requestsPerSecond: wrk.requests / (wrk.durationUs / 1e6),
    p50Ms: wrk.requests === 0 ? Number.NaN : wrk.p50Us / 1000,
    p99Ms: wrk.requests === 0 ? Number.NaN : wrk.p99Us / 1000,
    responses: wrk.requests,
    meanResponseBytes: wrk.requests === 0 ? 0 : wrk.bytes / wrk.requests,
    windowMs: wrk.durationUs / 1000,
    serverCpu: share(server),
    databaseCpu: share(database),
    generatorCpu: generator,
    otherCpu:
      machine === undefined
        ? undefined
        : Math.max(0, machine - generator - (share(server) ?? 0) - (share(database) ?? 0)),
  };
}

const socketErrors = (wrk: WrkResult) => wrk.connectErrors + wrk.readErrors + wrk.writeErrors + wrk.timeouts;

/**
 * A warm-up run of wrk, then the measured one, with the server's CPU read from /proc at each end.
 * The measured window is `durationMs`, longer when the warm-up's rate says it would hold fewer than
 * `minResponses` answers (up to `maxDurationMs`, or a request's timeout when the warm-up saw none).
 */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const helperPids = options.helperPids ?? (() => []);
  const wrkRun = (durationMs: number) => ({
    wrk: options.wrk,
    url: options.url,
    plan: options.plan,
    planFile: join(options.dir, 'wrk-plan.txt'),
    connections: options.connections,
    durationMs,
    timeoutS: REQUEST_TIMEOUT_S,
  });
  const warm = options.warmupMs > 0 ? await runWrk(wrkRun(options.warmupMs)) : undefined;
  let durationMs = options.durationMs;
  if (warm !== undefined) {
    const rate = warm.requests / (warm.durationUs / 1e6);
    const wanted =
      rate === 0 ? Math.max(options.maxDurationMs, REQUEST_TIMEOUT_S * 1000) : (options.minResponses / rate) * 1200;
    durationMs = Math.max(durationMs, Math.min(wanted, Math.max(options.maxDurationMs, durationMs)));
  }
  let start: Counters | undefined;
  const measured = await runWrk(wrkRun(durationMs), () => (start = snapshot(options.pid, helperPids)));
  const end = snapshot(options.pid, helperPids);
  const statusCodes: Record<string, number> = {};
  for (const run of [warm, measured])
    for (const [status, count] of Object.entries(run?.statusCodes ?? {}))
      statusCodes[status] = (statusCodes[status] ?? 0) + count;
  return {
    ...summarise(measured, start as Counters, end),
    errors: socketErrors(measured) + (warm === undefined ? 0 : socketErrors(warm)),
    timeouts: measured.timeouts + (warm?.timeouts ?? 0),
    non2xx: measured.non2xx + (warm?.non2xx ?? 0),
    statusCodes,
  };
}
