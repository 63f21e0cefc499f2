import { type ChildProcess, spawn } from 'node:child_process';

const ROOT = new URL('../..', import.meta.url).pathname;
/** The package's command, as `npx user-records` runs it (through tsx, compiling src/ each time). */
export const PACKAGE_BIN = `${ROOT}bin/user-records.mjs`;
/**
 * What the tests run as the command: under `npm test` the bundle scripts/run-tests.ts builds once
 * (TEST_CLI_BUNDLE), a tenth of the start-up CPU; run on its own, the package's bin.
 */
export const BIN = process.env.TEST_CLI_BUNDLE === undefined ? PACKAGE_BIN : `${ROOT}${process.env.TEST_CLI_BUNDLE}`;

export interface CliResult {
  code: number | string;
  stdout: string;
  stderr: string;
}

/**
 * Runs `user-records ARGS` as its own process (cwd: `cwd`, the repository by default) with `env`
 * added, optionally feeding `input` on standard input (left open after it with `keepStdinOpen`:
 * the command must end by itself). A run still going after `timeoutMs` is killed, and its code is
 * `timeout`.
 */
export function runCli(
  args: readonly string[],
  options: {
    env?: Record<string, string>;
    input?: string | Buffer;
    cwd?: string;
    timeoutMs?: number;
    keepStdinOpen?: boolean;
    onStart?: (child: ChildProcess) => void;
  } = {},
): Promise<CliResult> {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  options.onStart?.(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  child.stdin.on('error', () => undefined);
  if (options.keepStdinOpen === true) {
    if (options.input !== undefined) child.stdin.write(options.input);
    child.once('close', () => child.stdin.destroy());
  } else child.stdin.end(options.input);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve({ code: 'timeout', stdout, stderr });
    }, options.timeoutMs ?? 60_000);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal ?? 'unknown', stdout, stderr });
    });
  });
}
