// `npm start`, run exactly as the README says, stops on SIGTERM and SIGINT sent to the process that
// was started (npm), and leaves no process of its tree and no listener behind. The start script
// once ran `sh -c "npm run build && node dist/server.mjs"`: npm passed the signal to the shell, the
// shell died (SIGTERM) or waited (SIGINT), and the service went on serving.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { tempDir } from '../helpers/server.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
/** The grace the service is given (SHUTDOWN_TIMEOUT_MS); the test waits longer only to report a hang. */
const GRACE_MS = 5000;
const START_LIMIT_MS = 180_000;

/** A process as it was seen: its id and its start time, so a reused id is not taken for it. */
interface Seen {
  pid: number;
  start: string;
  command: string;
}

function seen(pid: number): Seen | undefined {
  try {
    // The start time is field 22 of /proc/PID/stat; the command (field 2) may hold spaces, so count after it.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
    return { pid, start, command };
  } catch {
    return undefined;
  }
}

/** The process and every descendant, from /proc/PID/task/TID/children. */
function tree(pid: number): Seen[] {
  const self = seen(pid);
  if (self === undefined) return [];
  const children: number[] = [];
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
      if (text !== '') children.push(...text.split(' ').map(Number));
    }
  } catch {
    // gone meanwhile
  }
  return [self, ...children.flatMap(tree)];
}

/** Whether the same process (same id, same start) still exists. */
const alive = (old: Seen) => seen(old.pid)?.start === old.start;

/** Whether a server can listen on 127.0.0.1:port now. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ port, host: '127.0.0.1', exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

describe('npm start, as the README runs it', { timeout: 2 * (START_LIMIT_MS + 60_000) }, () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`stops on ${signal} sent to npm, leaving no process and no listener`, async () => {
      const data = tempDir();
      const npm = spawn('npm', ['start'], {
        cwd: ROOT,
        env: {
          ...process.env,
          HOST: '127.0.0.1',
          PORT: '0',
          DATABASE_URL: `file:${join(data.dir, 'users.db')}`,
          SHUTDOWN_TIMEOUT_MS: String(GRACE_MS),
          LOG_LEVEL: 'info',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const pid = npm.pid as number;
      const logs: string[] = [];
      const exited = new Promise<number | string>((resolve) =>
        npm.once('exit', (code, killed) => resolve(code ?? killed ?? 'unknown')),
      );
      let started: Seen[] = [];
      try {
        const port = await new Promise<number>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`no start in time:\n${logs.join('\n')}`)), START_LIMIT_MS);
          const onLine = (line: string) => {
            logs.push(line);
            const match = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
            if (match !== null) {
              clearTimeout(timer);
              resolve(Number(match[1]));
            }
          };
          createInterface({ input: npm.stdout }).on('line', onLine);
          createInterface({ input: npm.stderr }).on('line', onLine);
          void exited.then((code) =>
            reject(new Error(`npm start exited (${code}) before listening:\n${logs.join('\n')}`)),
          );
        });
        started = tree(pid);
        assert.ok(
          started.some((p) => p.pid !== pid),
          'npm started no process',
        );

        npm.kill(signal);
        let hung: NodeJS.Timeout | undefined;
        const outcome = await Promise.race([
          exited,
          new Promise<string>((resolve) => {
            hung = setTimeout(() => resolve('still running'), GRACE_MS + 30_000);
          }),
        ]);
        clearTimeout(hung);
        // npm may leave the moment its child does; what it started is reaped just after.
        const left: Seen[] = [];
        for (let tries = 0; tries < 50; tries++) {
          left.splice(0, left.length, ...started.filter(alive));
          if (left.length === 0) break;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        assert.notEqual(outcome, 'still running', `npm start did not end:\n${logs.slice(-5).join('\n')}`);
        assert.deepEqual(
          left.map((p) => `${p.pid} ${p.command}`),
          [],
          `processes left running after ${signal}:\n${logs.slice(-5).join('\n')}`,
        );
        assert.ok(await portFree(port), `port ${port} is still listened on`);
        assert.ok(
          logs.some((line) => line.includes('"msg":"stopped"')),
          `the service did not stop gracefully:\n${logs.slice(-5).join('\n')}`,
        );
      } finally {
        // Only what this test started, by the ids it recorded.
        for (const survivor of started.filter(alive).reverse()) {
          try {
            process.kill(survivor.pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
        if (npm.exitCode === null && npm.signalCode === null) npm.kill('SIGKILL');
        data.cleanup();
      }
    });
  }
});
