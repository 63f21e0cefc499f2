import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';

export interface ServiceEntry {
  /** Node's arguments that start the service. */
  args: string[];
  note: string;
}

/**
 * The service as `npm start` runs it: the bundle that scripts/build.mjs makes, written into the
 * bench's temp dir so dist/, which `npm start` uses, is never touched.
 */
export function buildService(root: string, workDir: string): ServiceEntry {
  const dir = join(workDir, 'service');
  mkdirSync(dir, { recursive: true });
  const outfile = join(dir, 'server.mjs');
  execFileSync(process.execPath, ['scripts/build.mjs', outfile], { cwd: root, stdio: 'pipe' });
  // The bundle leaves packages external; this link lets Node find them from the temp dir.
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  return {
    args: [outfile],
    note: 'user-records runs as npm start does: the esbuild bundle of src/ (built into the temp dir)',
  };
}
