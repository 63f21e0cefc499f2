import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { tempDir } from '../helpers/server.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

/** Runs native-objects-child.ts until it exits (killed after 10 minutes: a hang is a failure; a loaded machine is slow, not wrong). */
function runChild(
  folder: string,
  opens: number,
  rounds: number,
): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'test/store/native-objects-child.ts', folder, String(opens), String(rounds)],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 600_000);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal ?? 'unknown', stdout, stderr });
    });
  });
}

// better-sqlite3 12 on Node 24.19 and later: a connection or statement the garbage collector takes
// aborts the process ("Assertion failed: (env) != nullptr" in RemoveEnvironmentCleanupHook), during
// operation or at its end (src/store/sqlite/native-objects.ts). On Node 20 and 22 this passes
// either way; on Node 24 it fails unless every such object stays reachable.
describe('better-sqlite3 objects on every Node line', () => {
  it('a process that opened 1000 connections and ran 260 listing shapes on each kind of store ends cleanly', async () => {
    const scratch = tempDir('user-records-native-');
    try {
      const { code, stdout, stderr } = await runChild(scratch.dir, 1000, 260);
      assert.doesNotMatch(stderr, /Assertion failed/);
      assert.equal(code, 0, stderr);
      // Every listing found its records (ages 36, 7 and 90 are all >= 0; at most 5 a page), on the
      // reader threads too, which are replaced as their statements pile up.
      assert.deepEqual(JSON.parse(stdout), { inMemory: 780, onReaders: 780 });
    } finally {
      scratch.cleanup();
    }
  });
});
