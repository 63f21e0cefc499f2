import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { get } from 'node:http';
import { createInterface } from 'node:readline';

/** How to run one system: its argv and environment for a given port. */
export interface Launch {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  /** A GET path that answers 200 once the system can serve. */
  readyPath: string;
  /**
   * Where its output goes: a file, as a service's log usually does (the bench then spends nothing
   * reading it); otherwise pipes this process drains.
   */
  logFile?: string;
}

export interface ChildServer {
  pid: number;
  url: string;
  /** Spawn to the first 200 on the ready path. */
  startupMs: number;
  /** The last lines the process printed. */
  logs(): string[];
  /** SIGTERM, then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

const started = new Set<ChildProcess>();

/** SIGKILLs, by PID, every process this module started that is still running; for exit paths. */
export function killStarted(): void {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  started.clear();
}

export { freePort } from '../test/helpers/free-port.ts';

/** The last lines of a log file (read from its last 16 KiB only: a busy service's log is large). */
function tail(file: string): string[] {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const size = fstatSync(fd).size;
    const buffer = Buffer.alloc(Math.min(size, 16_384));
    readSync(fd, buffer, 0, buffer.length, size - buffer.length);
    return buffer.toString('latin1').split('\n').slice(-40);
  } catch {
    return [];
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** One GET, resolving with its status (0 when the connection fails), bounded by `timeoutMs`. */
export function probe(url: string, timeoutMs = 1000): Promise<number> {
  return new Promise((resolve) => {
    const request = get(url, { agent: false, timeout: timeoutMs }, (response) => {
      response.resume();
      response.once('end', () => resolve(response.statusCode ?? 0));
    });
    request.once('timeout', () => request.destroy());
    request.once('error', () => resolve(0));
  });
}

/** Spawns a system (optionally under `prefix`, e.g. taskset) and resolves once its ready path answers 200. */
export async function startChild(launch: Launch, port: number, prefix: string[] = [], timeoutMs = 60_000) {
  const argv = [...prefix, ...launch.argv];
  const lines: string[] = [];
  const t0 = performance.now();
  // taskset execs the command, so the PID is the server's own.
  const output = launch.logFile === undefined ? 'pipe' : openSync(launch.logFile, 'a');
  const child = spawn(argv[0] as string, argv.slice(1), {
    cwd: launch.cwd,
    env: { ...process.env, ...launch.env },
    stdio: ['ignore', output, output],
  });
  if (typeof output === 'number') closeSync(output);
  started.add(child);
  const keep = (line: string) => {
    lines.push(line);
    if (lines.length > 40) lines.shift();
  };
  // Both pipes are always drained, or a chatty server would block on a full pipe.
  for (const stream of [child.stdout, child.stderr])
    if (stream !== null) createInterface({ input: stream }).on('line', keep);
  const lastLines = () => (launch.logFile === undefined ? [...lines] : tail(launch.logFile));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('error', (error) => keep(`spawn error: ${error.message}`));

  const url = `http://127.0.0.1:${port}`;
  const deadline = t0 + timeoutMs;
  let startupMs: number | undefined;
  while (performance.now() < deadline && child.exitCode === null && child.signalCode === null) {
    if ((await probe(url + launch.readyPath)) === 200) {
      startupMs = performance.now() - t0;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  // By default answers still being computed for closed benchmark connections are not worth waiting for.
  const stop = async (graceMs = 3_000) => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const late = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(late);
    }
    started.delete(child);
  };
  if (startupMs === undefined || child.pid === undefined) {
    await stop();
    const why = child.exitCode !== null ? `exited with code ${child.exitCode}` : `not ready within ${timeoutMs} ms`;
    throw new Error(`${argv.join(' ')} ${why}:\n  ${lastLines().slice(-8).join('\n  ')}`);
  }
  return { pid: child.pid, url, startupMs, logs: lastLines, stop } satisfies ChildServer;
}
