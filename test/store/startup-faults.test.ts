import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BIN } from '../helpers/cli.ts';
import { DEFAULT_ENTRY, tempDir } from '../helpers/server.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

/** Runs an entry with `env` until it exits (killed after 20 s: a hang is a failure). */
function run(
  entry: readonly string[],
  env: Record<string, string>,
): Promise<{ code: number | string; stderr: string }> {
  const child = spawn(process.execPath, [...entry], {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal ?? 'unknown', stderr });
    });
  });
}

// Start-up faults a new operator meets: each is explained in one line that names the path or the
// setting and the cause, the process exits non-zero (never hangs), and nothing is left behind.
describe('start-up faults', () => {
  const scratch = tempDir('user-records-faults-');
  let busy: Server;
  let busyPort = 0;
  before(async () => {
    mkdirSync(join(scratch.dir, 'a-folder'));
    busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    busyPort = (busy.address() as { port: number }).port;
  });
  after(() => {
    busy.close();
    scratch.cleanup();
  });

  const cases: Array<{ name: string; env: () => Record<string, string>; code: number; line: () => RegExp }> = [
    {
      name: 'a database under /proc (mkdir -p never returns there on Node 20)',
      env: () => ({ DATABASE_URL: 'file:/proc/x/users.db' }),
      code: 1,
      line: () => /cannot create the folder \/proc\/x for \/proc\/x\/users\.db: .*\(ENOENT\)/,
    },
    {
      name: 'a folder given as the database file',
      env: () => ({ DATABASE_URL: join(scratch.dir, 'a-folder') }),
      code: 1,
      line: () => /a-folder is not a file \(a folder\?\); name the database file/,
    },
    {
      name: 'a file where a folder should be',
      env: () => ({ DATABASE_URL: 'file:/etc/hostname/users.db' }),
      code: 1,
      line: () => /\/etc\/hostname is not a folder, so it cannot hold \/etc\/hostname\/users\.db/,
    },
    {
      name: 'a rate limit that is not a number',
      env: () => ({ RATE_LIMIT: 'fast', DATABASE_URL: join(scratch.dir, 'rate.db') }),
      code: 2,
      line: () => /RATE_LIMIT must be a whole number from 1 to 100000000, or off, got "fast"/,
    },
    {
      name: 'a port in use (the database is not created first)',
      env: () => ({ PORT: String(busyPort), DATABASE_URL: join(scratch.dir, 'port', 'users.db') }),
      code: 1,
      line: () => new RegExp(`port ${busyPort} on 127\\.0\\.0\\.1 \\(PORT, HOST\\) is in use by another process`),
    },
  ];

  for (const entry of [DEFAULT_ENTRY, [BIN, 'serve']]) {
    for (const fault of cases) {
      it(`${fault.name} [${entry.at(-1)}]`, async () => {
        const before = readdirSync(scratch.dir).sort();
        const result = await run(entry, fault.env());
        assert.equal(result.code, fault.code, result.stderr);
        const lines = result.stderr.trimEnd().split('\n');
        assert.match(lines.at(-1) ?? '', fault.line());
        // Its reason fits one line (a config error lists each bad setting on its own line under it).
        assert.ok(lines.length <= 2, result.stderr);
        assert.deepEqual(readdirSync(scratch.dir).sort(), before, 'nothing left behind');
        assert.equal(existsSync('/proc/x'), false);
      });
    }
  }
});
