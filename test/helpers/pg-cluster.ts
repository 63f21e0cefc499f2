import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.ts';

export interface PostgresCluster {
  /** Superuser URL on 127.0.0.1, database `postgres`. */
  url: string;
  /** The server version it reports, e.g. `15.18`. */
  version: string;
  /**
   * Stops the server, the data stays: `fast` (SIGINT to the postmaster we started: sessions are
   * ended, the data flushed) or `immediate` (SIGQUIT: every process quits at once, as in a crash;
   * the next start replays the WAL).
   */
  halt(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts the server again on the same port and data. */
  resume(): Promise<void>;
  /** Stops the server and removes its data. */
  stop(): Promise<void>;
}

/** The folder with initdb and postgres: `PG_BIN`, or the newest under /usr/lib/postgresql. */
export function findPostgresBin(): string | undefined {
  const given = process.env.PG_BIN;
  if (given !== undefined && given !== '') return existsSync(join(given, 'initdb')) ? given : undefined;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((name) => existsSync(join(root, name, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

/** PostgreSQL refuses to run as root; as root we run it as the `postgres` user. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

/**
 * Creates and starts a throwaway PostgreSQL cluster on 127.0.0.1 (trust auth, user `app`), about
 * a second's work. The postmaster is our own child process, so only it is ever signalled.
 */
export async function startPostgresCluster(bin = findPostgresBin(), timeoutMs = 30_000): Promise<PostgresCluster> {
  if (bin === undefined) throw new Error('no PostgreSQL binaries found (set PG_BIN or install postgresql)');
  const dir = mkdtempSync(join(tmpdir(), 'user-records-pg-'));
  const user = runAs();
  if (user !== undefined) chownSync(dir, user.uid, user.gid);
  const data = join(dir, 'data');
  execFileSync(join(bin, 'initdb'), ['-D', data, '-U', 'app', '--auth=trust', '-E', 'UTF8', '--no-locale', '-N'], {
    ...user,
    stdio: 'pipe',
  });
  const version =
    /\d+(\.\d+)*/.exec(execFileSync(join(bin, 'postgres'), ['--version'], { encoding: 'utf8' }))?.[0] ?? '?';
  const port = await freePort();
  let server: ChildProcess | undefined;

  const start = () =>
    new Promise<void>((resolve, reject) => {
      const args = ['-D', data, '-h', '127.0.0.1', '-p', String(port), '-k', dir, '-c', 'max_connections=200'];
      const child = spawn(join(bin, 'postgres'), args, { ...user, stdio: ['ignore', 'ignore', 'pipe'] });
      server = child;
      const output: string[] = [];
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`PostgreSQL did not start within ${timeoutMs} ms:\n${output.join('')}`));
      }, timeoutMs);
      child.stderr?.on('data', (chunk: Buffer) => {
        output.push(chunk.toString());
        if (output.join('').includes('database system is ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`PostgreSQL exited (${code}) before it was ready:\n${output.join('')}`));
      });
    });

  const halt = async (mode: 'fast' | 'immediate' = 'fast') => {
    const child = server;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(mode === 'fast' ? 'SIGINT' : 'SIGQUIT');
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
  };

  await start();
  return {
    url: `postgres://app@127.0.0.1:${port}/postgres`,
    version,
    halt,
    resume: start,
    stop: async () => {
      await halt('fast');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
