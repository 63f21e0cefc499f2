import { execFileSync, spawn } from 'node:child_process';
import { accessSync, constants, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What one wrk run sends (bench/wrk/workload.lua reads it): GETs sent in turn, and creates made
 * from a template with a serial never sent before, as `createShare` of the requests.
 */
export interface RequestPlan {
  /** GETs sent in turn. */
  gets?: string[];
  /** Or GETs of `prefix`, a random id in 1..records, `suffix`. */
  read?: { records: number; prefix: string; suffix?: string };
  /** Headers on every request (a bearer token, `Prefer: count=exact`). */
  headers?: Record<string, string>;
  /**
   * A create: `{n}` is a serial never sent before, `{age}` and `{city}` are derived from it; the
   * cities are encoded for where they go (a query string, a JSON body).
   */
  create?: { method: 'POST'; path: string; body?: string; cities: string[]; headers?: Record<string, string> };
  /** The share of creates among the requests: 0 (reads), 0.1 (the mix), 1 (creates). */
  createShare: number;
}

export interface WrkResult {
  requests: number;
  durationUs: number;
  bytes: number;
  p50Us: number;
  p99Us: number;
  connectErrors: number;
  readErrors: number;
  writeErrors: number;
  timeouts: number;
  non2xx: number;
  statusCodes: Record<string, number>;
  /** CPU seconds wrk itself used, every thread, from its /proc/self/stat. */
  cpuSeconds: number;
}

const SCRIPT = new URL('wrk/workload.lua', import.meta.url).pathname;

/** wrk: WRK_BIN, else the first on PATH; undefined when there is none. */
export function findWrk(): string | undefined {
  const candidates = [process.env.WRK_BIN, ...(process.env.PATH ?? '').split(':').map((dir) => join(dir, 'wrk'))];
  for (const file of candidates) {
    if (file === undefined || file === '') continue;
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // Not there, or not executable.
    }
  }
  return undefined;
}

/**
 * wrk, installed with apt-get (Debian's package `wrk`) when it is missing, or the reason there is
 * none. The bench cannot measure without it: autocannon, in Node, saturates its own core first.
 */
export function ensureWrk(log: (line: string) => void): string | { error: string } {
  const found = findWrk();
  if (found !== undefined) return found;
  log('wrk is not installed: apt-get install -y wrk');
  try {
    execFileSync('apt-get', ['install', '-y', 'wrk'], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 300_000 });
  } catch (error) {
    const why = (error as { stderr?: Buffer }).stderr?.toString().trim().split('\n').at(-1) ?? (error as Error).message;
    return { error: `wrk is missing and apt-get install -y wrk failed (${why}); install wrk, or set WRK_BIN` };
  }
  return findWrk() ?? { error: 'apt-get installed wrk, but no wrk is on PATH; set WRK_BIN' };
}

let serial = 0;

/** Writes the plan where workload.lua reads it; each run's creates start past every earlier run's. */
function writePlan(plan: RequestPlan, file: string): void {
  serial += 100_000_000;
  const lines = [`creates ${plan.createShare}`, `serial ${serial}`];
  for (const [name, value] of Object.entries(plan.headers ?? {})) lines.push(`header ${name}: ${value}`);
  if (plan.read !== undefined) lines.push(`read ${plan.read.records} ${plan.read.prefix} ${plan.read.suffix ?? ''}`);
  if (plan.create !== undefined) {
    lines.push(`create ${plan.create.method} ${plan.create.path}`);
    for (const [name, value] of Object.entries(plan.create.headers ?? {}))
      lines.push(`create-header ${name}: ${value}`);
    if (plan.create.body !== undefined) lines.push(`body ${plan.create.body}`);
    for (const city of plan.create.cities) lines.push(`city ${city}`);
  }
  for (const path of plan.gets ?? []) lines.push(`get ${path}`);
  writeFileSync(file, `${lines.join('\n')}\n`);
}

export interface WrkRun {
  wrk: string;
  url: string;
  plan: RequestPlan;
  /** Where the plan file goes. */
  planFile: string;
  connections: number;
  durationMs: number;
  timeoutS: number;
}

/**
 * One wrk run: one thread (the generator has one core), `connections` connections, for
 * `durationMs`. wrk's -d takes whole seconds, so it is given more and stopped with SIGINT, on which
 * it ends its threads within 100 ms and reports the time it really ran. `started` is called once
 * wrk is spawned.
 */
export function runWrk(run: WrkRun, started: () => void = () => {}): Promise<WrkResult> {
  writePlan(run.plan, run.planFile);
  const seconds = Math.ceil(run.durationMs / 1000) + 2;
  const args = ['-t1', `-c${run.connections}`, `-d${seconds}s`, `--timeout`, `${run.timeoutS}s`, '-s', SCRIPT];
  return new Promise((resolve, reject) => {
    const child = spawn(run.wrk, [...args, run.url, '--', run.planFile], { stdio: ['ignore', 'pipe', 'pipe'] });
    started();
    const stop = setTimeout(() => child.kill('SIGINT'), run.durationMs);
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(stop);
      const line = /^wrk-result (.*)$/m.exec(out)?.[1];
      if (code !== 0 || line === undefined) {
        reject(new Error(`wrk ${args.join(' ')} ${run.url} failed (exit ${code}): ${out.trim().slice(-400)}`));
        return;
      }
      resolve(JSON.parse(line) as WrkResult);
    });
  });
}

/** wrk's path, or the process ends with the reason there is none (exit code 2). */
export function wrkOrExit(command: string, log: (line: string) => void): string {
  const found = ensureWrk(log);
  if (typeof found === 'string') return found;
  process.stderr.write(`${command}: ${found.error}\n`);
  process.exit(2);
}
