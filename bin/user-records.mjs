#!/usr/bin/env node
// `user-records`, the package's command. It runs a bundle of src/cli.ts (dist/cli/user-records.mjs),
// built on first use and again whenever a file under src/ is newer than it: compiling src/ through
// tsx at every start costs about half a second and 100 MB more memory. Where the bundle cannot be
// written (a read-only folder), it runs src/cli.ts through tsx, as before. The package `npm pack`
// makes carries no src/: its bundle was built at pack time (the prepack script) and is run as it is,
// with nothing written into the installed package and no tsx.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const folder = join(root, 'dist', 'cli');
const bundle = join(folder, 'user-records.mjs');

/** The newest modification time of the files under `dir`. */
function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) latest = Math.max(latest, statSync(join(entry.parentPath ?? entry.path, entry.name)).mtimeMs);
  }
  return latest;
}

function fresh() {
  try {
    return (
      statSync(bundle).mtimeMs >= Math.max(newest(join(root, 'src')), statSync(join(root, 'package.json')).mtimeMs)
    );
  } catch {
    return false;
  }
}

/**
 * Builds into a folder of its own, then moves the files in place, the entry last: a command starting
 * meanwhile never reads half a file (the chunks' names are hashes of their content).
 */
function build() {
  let temporary;
  try {
    // Inside the try: a dist/ that cannot be written (a checkout owned by another user) runs the
    // sources instead, as a read-only folder does.
    temporary = mkdtempSync(join(root, 'dist', '.cli-'));
    execFileSync(
      process.execPath,
      [join(root, 'scripts', 'build.mjs'), join(temporary, 'user-records.mjs'), join(root, 'src', 'cli.ts')],
      { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] },
    );
    const files = readdirSync(temporary).filter((name) => name !== 'user-records.mjs');
    for (const name of [...files, 'user-records.mjs']) renameSync(join(temporary, name), join(folder, name));
    // Chunks of earlier builds (a running command has loaded its own already).
    for (const name of readdirSync(folder)) {
      if (name.startsWith('cli-') && !files.includes(name)) rmSync(join(folder, name), { force: true });
    }
    return true;
  } catch {
    return false;
  } finally {
    if (temporary !== undefined) rmSync(temporary, { recursive: true, force: true });
  }
}

function ready() {
  if (!existsSync(join(root, 'src')) || fresh()) return true;
  try {
    mkdirSync(folder, { recursive: true });
  } catch {
    return false;
  }
  return build();
}

if (ready()) await import(pathToFileURL(bundle).href);
else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli.ts');
}
