// Bundles each test file, with the helpers and the source it imports, into an ES module of its own
// under `out` (scripts/run-tests.ts runs those). Through tsx, every module a test process loads
// passes through tsx's loader thread: typebox alone (some 700 files) costs a process about 2 s of
// CPU that way, against a tenth of that from a bundle. The bundles share their common parts as
// chunks beside them (one build, about 1.5 s of CPU). Packages stay external, loaded from
// node_modules, but typebox (as in scripts/build.mjs). Each module keeps its source file's
// import.meta.url, so the paths that tests and source work out from it (the repository, the docs)
// are those of a run through tsx. No source maps: they cost each test process about 0.4 s, and
// the bundles keep the source's names; `node --import tsx --test FILE` runs one file from source.
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Plugin, stop } from 'esbuild';

const BUNDLED = /^typebox(\/|$)/;

const externals: Plugin = {
  name: 'externals',
  setup(bundle) {
    bundle.onResolve({ filter: /^[^./]/ }, (args) =>
      args.kind === 'entry-point' || BUNDLED.test(args.path) ? undefined : { path: args.path, external: true },
    );
  },
};

const sourceUrls: Plugin = {
  name: 'source-urls',
  setup(bundle) {
    bundle.onLoad({ filter: /\.(ts|mjs)$/ }, (args) => {
      if (args.path.includes('/node_modules/')) return undefined;
      const text = readFileSync(args.path, 'utf8');
      return {
        contents: text.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)),
        loader: args.path.endsWith('.ts') ? 'ts' : 'js',
      };
    });
  },
};

/**
 * Bundles the test `files` (paths from the repository) into `out`, each at its own path with .mjs,
 * with `preload` run first in each (as `--import` would); answers the bundles' paths, in order.
 */
export async function buildTests(files: readonly string[], out: string, preload: string): Promise<string[]> {
  const name = (file: string) => relative('.', file).replace(/\.ts$/, '');
  await build({
    entryPoints: Object.fromEntries(files.map((file) => [name(file), file])),
    outdir: out,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    chunkNames: 'chunks/[hash]',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
    plugins: [externals, sourceUrls],
    inject: [preload],
  });
  // Its service process ends here, so the CPU it used is counted in the run's (run-tests.ts).
  await stop();
  return files.map((file) => join(out, `${name(file)}.mjs`));
}
