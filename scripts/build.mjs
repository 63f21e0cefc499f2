// Bundles src/ into ES modules for `npm start`: server.mjs, and sqlite-writer.mjs and sqlite-reader.mjs
// beside it (the SQLite writer's and readers' worker threads, which the server starts from its own folder). Packages stay
// external, loaded from node_modules. `node scripts/build.mjs OUTFILE` writes elsewhere than
// dist/server.mjs (the tests and the benchmark do, so that they never race a running `npm start`);
// `node scripts/build.mjs OUTFILE src/cli.ts` bundles the command line instead (the tests run it,
// and bin/user-records.mjs builds it into dist/cli/). The command line's bundle is split: what only
// `serve` needs (the HTTP side and its packages) is a chunk beside it, loaded when `serve` runs, so
// the other commands start in half the time and memory. The admin page (admin/) is built here too,
// and its files carried inside the bundle.
import { basename, dirname, extname, join } from 'node:path';
import { build } from 'esbuild';
import { buildAdmin } from '../admin/build.mjs';

const outfile = process.argv[2] ?? 'dist/server.mjs';
const entry = process.argv[3] ?? 'src/server.ts';
/** The admin page, built once here and carried in the bundle in place of src/ops/admin-assets.ts. */
let admin;
const adminAssets = {
  name: 'admin-assets',
  setup(bundle) {
    bundle.onLoad({ filter: /[\\/]src[\\/]ops[\\/]admin-assets\.ts$/ }, async () => {
      admin ??= buildAdmin();
      return { contents: `export const adminAssets = async () => (${JSON.stringify(await admin)});`, loader: 'js' };
    });
  },
};
const common = {
  bundle: true,
  plugins: [adminAssets],
  platform: 'node',
  format: 'esm',
  packages: 'external',
  target: 'node20',
  logLevel: 'warning',
};

if (entry === 'src/cli.ts' || entry.endsWith('/src/cli.ts')) {
  await build({
    ...common,
    entryPoints: { [basename(outfile, extname(outfile))]: entry },
    outdir: dirname(outfile),
    outExtension: { '.js': extname(outfile) || '.js' },
    splitting: true,
    chunkNames: 'cli-[hash]',
  });
} else {
  await build({ ...common, entryPoints: [entry], outfile });
}
for (const [thread, source] of [
  ['sqlite-writer', 'src/store/sqlite/writer-thread.ts'],
  ['sqlite-reader', 'src/store/sqlite/reader-thread.ts'],
]) {
  await build({ ...common, entryPoints: [source], outfile: join(dirname(outfile), `${thread}.mjs`) });
}
