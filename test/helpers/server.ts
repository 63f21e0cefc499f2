import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before } from 'node:test';
import type { Backend, Database } from './backends.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
export const SOURCE = ['--import', 'tsx', 'src/server.ts'] as const;
/**
 * What a server process runs unless the test names its entry: `npm test` (scripts/run-tests.ts)
 * bundles src/ once and names the bundle in TEST_SERVER_BUNDLE, which starts in a tenth of the CPU
 * time of compiling the source again in every process; a test file run on its own runs the source.
 */
export const DEFAULT_ENTRY: readonly string[] =
  process.env.TEST_SERVER_BUNDLE === undefined ? SOURCE : [process.env.TEST_SERVER_BUNDLE];
/** What `npm start` runs, built by the tests into .tmp/ (scripts/build.mjs) to leave dist/ alone. */
export const BUNDLE = ['.tmp/test-bundle/server.mjs'] as const;

/**
 * Settings every server process starts with unless the test names its own. OVERLOAD_LAG_MS is raised
 * far above its default (500 ms): on a busy machine the server's event loop runs that late often
 * enough to shed requests with 503, and only the tests of shedding want that (they set their own).
 * DATABASE_TIMEOUT_MS likewise (default 5 s): with other test files, a benchmark and two database
 * servers sharing two cores and a disk, one commit once waited longer than that and answered 503;
 * the tests of database timeouts set their own.
 */
export const PROCESS_DEFAULTS: Readonly<Record<string, string>> = {
  HOST: '127.0.0.1',
  PORT: '0',
  LOG_LEVEL: 'info',
  OVERLOAD_LAG_MS: '60000',
  DATABASE_TIMEOUT_MS: '30000',
};

export interface RunningServer {
  url: string;
  pid: number;
  /** Every line the server printed so far (stdout and stderr). */
  logs: string[];
  /** Stops reading the server's standard output (its pipe fills, as with a stalled log reader); returns the resume. */
  holdOutput(): () => void;
  /**
   * Sends the signal and resolves with the exit code (or the signal name). A server still running
   * after `timeoutMs` is killed and the answer is `timeout`.
   */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | string>;
}

/** A temporary folder for a test's database, removed by the returned cleanup. */
export function tempDir(prefix = 'user-records-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Starts the real service (`src/server.ts`) as its own process on 127.0.0.1 and an ephemeral port,
 * and resolves once it listens (a start takes about a second of CPU; 60 s allows for a machine far
 * busier than its cores). The PID is the server itself, so tests can signal exactly it.
 */
export function startServer(
  env: Record<string, string> = {},
  timeoutMs = 60_000,
  /** A command to run the server under (e.g. strace and its flags); the PID is then the wrapper's. */
  wrapper: string[] = [],
  /** Node's arguments: the TypeScript source by default, or the bundle `npm start` builds. */
  entry: readonly string[] = DEFAULT_ENTRY,
  /** The folder it runs in: the repository, unless the test runs an installed copy elsewhere. */
  cwd = ROOT,
): Promise<RunningServer> {
  const command = [...wrapper, process.execPath, ...entry];
  const child: ChildProcess = spawn(command[0] as string, command.slice(1), {
    cwd,
    env: { ...process.env, ...PROCESS_DEFAULTS, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  const stdout = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  // With several workers, the primary says when all of them listen.
  const ready =
    env.WORKERS !== undefined && env.WORKERS !== '1'
      ? /workers listening at (http:\/\/127\.0\.0\.1:\d+)/
      : /Server listening at (http:\/\/127\.0\.0\.1:\d+)/;
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start within ${timeoutMs} ms:\n${logs.join('\n')}`));
    }, timeoutMs);
    const onLine = (line: string) => {
      logs.push(line);
      const match = ready.exec(line);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        resolve({
          url: match[1],
          pid: child.pid as number,
          logs,
          holdOutput: () => {
            stdout.pause();
            return () => stdout.resume();
          },
          stop: async (signal: NodeJS.Signals = 'SIGTERM', stopTimeoutMs = 15_000) => {
            if (child.exitCode !== null || child.signalCode !== null) return exited;
            child.kill(signal);
            let timer: NodeJS.Timeout | undefined;
            const late = new Promise<string>((resolve) => {
              timer = setTimeout(() => resolve('timeout'), stopTimeoutMs);
            });
            const outcome = await Promise.race([exited, late]);
            clearTimeout(timer);
            if (outcome === 'timeout') {
              child.kill('SIGKILL');
              await exited;
            }
            return outcome;
          },
        });
      }
    };
    stdout.on('line', onLine);
    createInterface({ input: child.stderr as NodeJS.ReadableStream }).on('line', onLine);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before listening:\n${logs.join('\n')}`));
    });
  });
}

/**
 * Starts the server on a fresh database of the backend (SQLite unless given) before the enclosing
 * suite's tests and stops it after. Read `url` inside tests (it is known once the suite has started).
 */
export function serverForSuite(
  env: Record<string, string> = {},
  backend?: Backend,
  entry: readonly string[] = DEFAULT_ENTRY,
): { readonly url: string } {
  const data = tempDir();
  let server: RunningServer | undefined;
  let database: Database | undefined;
  before(async () => {
    database = await backend?.fresh();
    server = await startServer(
      { DATABASE_URL: database?.url ?? join(data.dir, 'users.db'), ...env },
      60_000,
      [],
      entry,
    );
  });
  after(async () => {
    await server?.stop();
    await database?.drop();
    data.cleanup();
  });
  return {
    get url() {
      if (server === undefined) throw new Error('the suite server has not started');
      return server.url;
    },
  };
}

/** The PIDs of the processes that logged a line holding `message` (JSON log lines carry `pid`). */
export function pidsLogging(logs: string[], message: string): Set<number> {
  const pids = new Set<number>();
  for (const line of logs) {
    if (!line.includes(message)) continue;
    const entry = JSON.parse(line) as { pid?: number };
    if (entry.pid !== undefined) pids.add(entry.pid);
  }
  return pids;
}
