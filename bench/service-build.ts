import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { buildSync } from 'esbuild';

export interface ServiceEntry {
  /** Node's arguments that start the service. */
  args: string[];
  /** Node's arguments that start the service with only some of its layers (bench/layered-server.ts). */
  layeredArgs: string[];
  note: string;
}

/**
 * The service as `npm start` runs it: the bundle that scripts/build.mjs makes, written into the
 * bench's temp dir so dist/, which `npm start` uses, is never touched. The price list's server is
 * bundled the same way beside it (it starts the same SQLite writer thread from that folder).
 */
export function buildService(root: string, workDir: string): ServiceEntry {
  const dir = join(workDir, 'service');
  mkdirSync(dir, { recursive: true });
  const outfile = join(dir, 'server.mjs');
  execFileSync(process.execPath, ['scripts/build.mjs', outfile], { cwd: root, stdio: 'pipe' });
  const layered = join(dir, 'layered-server.mjs');
  buildSync({
    entryPoints: [join(root, 'bench/layered-server.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    target: 'node20',
    outfile: layered,
    logLevel: 'warning',
  });
  // The price list's server leaves packages external, and the service's bundle its native one (and
  // finds the docs page's files in node_modules): this link lets Node find them from the temp dir.
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  return {
    args: [outfile],
    layeredArgs: [layered],
    note: 'user-records runs as npm start does: the esbuild bundle of src/ (built into the temp dir)',
  };
}
