import autocannon, { type Request } from 'autocannon';
import { cpuSeconds, machineBusySeconds } from './proc-stats.ts';

export interface LoadOptions {
  url: string;
  /** Each connection's own request list (so random lists differ between connections). */
  requests: () => Request[];
  /** Headers every request carries (a bearer token, say). */
  headers?: Record<string, string>;
  connections: number;
  /** Run but not measured, so connections, JIT and caches settle first. */
  warmupMs: number;
  durationMs: number;
  /** A slow workload is measured longer, up to maxDurationMs, until it has this many responses. */
  minResponses: number;
  maxDurationMs: number;
  /** The server's PID, to read its CPU time. */
  pid: number;
  /** Processes doing the system's work besides the server (PostgreSQL's), read at each end of the window. */
  helperPids?: () => number[];
}

export interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses counted in the measured window, their mean size in bytes (headers included), and the window's length. */
  responses: number;
  meanResponseBytes: number;
  windowMs: number;
  /** Connection errors and timeouts over the whole run, warm-up included. */
  errors: number;
  timeouts: number;
  /** Responses other than 2xx over the whole run, warm-up included. */
  non2xx: number;
  statusCodes: Record<string, number>;
  /** Cores used in the measured window by the server, its database processes, this process (the generator), and everything else. */
  serverCpu: number | undefined;
  databaseCpu: number | undefined;
  generatorCpu: number;
  otherCpu: number | undefined;
}

// A request not answered within this is counted as a timeout (an error).
const REQUEST_TIMEOUT_S = 20;

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length === 0 ? Number.NaN : (sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0);
}

interface Counters {
  at: number;
  server: number | undefined;
  helpers: Map<number, number>;
  generator: NodeJS.CpuUsage;
  machine: number | undefined;
}

function snapshot(pid: number, helperPids: () => number[]): Counters {
  const helpers = new Map<number, number>();
  for (const helper of helperPids()) {
    const seconds = cpuSeconds(helper);
    if (seconds !== undefined) helpers.set(helper, seconds);
  }
  return {
    at: performance.now(),
    server: cpuSeconds(pid),
    helpers,
    generator: process.cpuUsage(),
    machine: machineBusySeconds(),
  };
}

/** CPU seconds the helpers used between two snapshots, over the processes seen in both. */
function helperSeconds(start: Counters, end: Counters): number | undefined {
  if (end.helpers.size === 0) return undefined;
  let total = 0;
  for (const [pid, seconds] of end.helpers) total += seconds - (start.helpers.get(pid) ?? seconds);
  return total;
}

function summarise(latencies: number[], start: Counters, end: Counters) {
  const seconds = (end.at - start.at) / 1000;
  const sorted = Float64Array.from(latencies).sort();
  const generator =
    (end.generator.user - start.generator.user + end.generator.system - start.generator.system) / 1e6 / seconds;
  const server =
    start.server === undefined || end.server === undefined ? undefined : (end.server - start.server) / seconds;
  const machine =
    start.machine === undefined || end.machine === undefined ? undefined : (end.machine - start.machine) / seconds;
  const helpers = helperSeconds(start, end);
  const database = helpers === undefined ? undefined : helpers / seconds;
  return {
    requestsPerSecond: latencies.length / seconds,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    responses: latencies.length,
    windowMs: end.at - start.at,
    serverCpu: server,
    databaseCpu: database,
    generatorCpu: generator,
    otherCpu: machine === undefined ? undefined : Math.max(0, machine - generator - (server ?? 0) - (database ?? 0)),
  };
}

/**
 * One autocannon run in this process. Latency is taken from each response's own timing in
 * fractions of a millisecond (autocannon's histogram keeps whole milliseconds only).
 */
export function runLoad(options: LoadOptions): Promise<LoadResult> {
  const latencies: number[] = [];
  const statusCodes: Record<string, number> = {};
  let errors = 0;
  let timeouts = 0;
  let non2xx = 0;
  let windowBytes = 0;
  let start: Counters | undefined;
  let end: Counters | undefined;
  const timers: NodeJS.Timeout[] = [];
  const helperPids = options.helperPids ?? (() => []);

  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: options.url,
        connections: options.connections,
        ...(options.headers === undefined ? {} : { headers: options.headers }),
        setupClient: (client) => client.setRequests(options.requests()),
        // The run is stopped by the timers below; this is only a backstop.
        duration: (options.warmupMs + options.maxDurationMs) / 1000 + 30,
        timeout: REQUEST_TIMEOUT_S,
      },
      (error) => {
        for (const timer of timers) clearTimeout(timer);
        if (error !== null) return reject(error);
        if (start === undefined || end === undefined) return reject(new Error('autocannon ended before the window'));
        const meanResponseBytes = latencies.length === 0 ? 0 : windowBytes / latencies.length;
        resolve({ ...summarise(latencies, start, end), meanResponseBytes, errors, timeouts, non2xx, statusCodes });
      },
    );
    const finish = () => {
      const elapsed = performance.now() - (start?.at ?? 0);
      const wanted = latencies.length < options.minResponses && elapsed < options.maxDurationMs;
      // With no answer at all there is nothing to report; wait for one, as long as a request may take.
      if (wanted || (latencies.length === 0 && elapsed < REQUEST_TIMEOUT_S * 1000)) {
        timers.push(setTimeout(finish, 50));
        return;
      }
      end = snapshot(options.pid, helperPids);
      instance.stop();
    };
    timers.push(
      setTimeout(() => {
        start = snapshot(options.pid, helperPids);
        timers.push(setTimeout(finish, options.durationMs));
      }, options.warmupMs),
    );
    instance.on('response', (_client, statusCode, bytes, responseTime) => {
      statusCodes[statusCode] = (statusCodes[statusCode] ?? 0) + 1;
      if (statusCode < 200 || statusCode > 299) non2xx += 1;
      if (start !== undefined && end === undefined) {
        latencies.push(responseTime);
        windowBytes += bytes;
      }
    });
    instance.on('reqError', (error: unknown) => {
      errors += 1;
      if (error instanceof Error && error.message === 'request timed out') timeouts += 1;
    });
  });
}
