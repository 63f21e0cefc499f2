// Bundles src/ into ES modules for `npm start`: server.mjs, and sqlite-writer.mjs and sqlite-reader.mjs
// beside it (the SQLite writer's and readers' worker threads, which the server starts from its own folder). Packages stay
// external, loaded from node_modules, but for typebox (see BUNDLED). `node scripts/build.mjs OUTFILE` writes elsewhere than
// dist/server.mjs (the tests and the benchmark do, so that they never race a running `npm start`);
// `node scripts/build.mjs OUTFILE src/cli.ts` bundles the command line instead (the tests run it,
// and bin/user-records.mjs builds it into dist/cli/). The command line's bundle is split: what only
// `serve` needs (the HTTP side and its packages) is a chunk beside it, loaded when `serve` runs, so
// the other commands start in half the time and memory; the server's is split too (server-*.mjs). The admin page (admin/) is built here too,
// and its files carried inside the bundle. scripts/start.mjs (`npm start`) calls buildBundle in its
// own process before it runs the bundle.
import { readdirSync, rmSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { buildAdmin } from '../admin/build.mjs';
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
/**
 * Packages stay external, loaded from node_modules, but typebox: an ES module of some 700 files,
 * which Node would find, read and link one by one at every start (most of a command's start-up
 * time), is carried in the bundle. No external package loads typebox itself (the type provider's
 * import is of types only), so there is one copy of it.
 */
const BUNDLED = /^typebox(\/|$)/;
const externals = {
  name: 'externals',
  setup(bundle) {
    bundle.onResolve({ filter: /^[^./]/ }, (args) =>
      args.kind === 'entry-point' || BUNDLED.test(args.path) ? undefined : { path: args.path, external: true },
    );
  },
};
const common = {
  bundle: true,
  plugins: [externals, adminAssets],
  platform: 'node',
  format: 'esm',
  target: 'node20',
  logLevel: 'warning',
};

/** Bundles `entry` into `outfile`, with the SQLite threads beside it; paths from the package's folder, where npm runs scripts. */
export async function buildBundle(outfile = 'dist/server.mjs', entry = 'src/server.ts') {
  const cli = entry === 'src/cli.ts' || entry.endsWith('/src/cli.ts');
  // Both are split where the source loads a module only when needed: the command line's `serve`
  // side, and PostgreSQL's driver (src/store/postgres/database.ts), which a service on SQLite never loads.
  const chunks = cli ? 'cli-' : `${basename(outfile, extname(outfile))}-`;
  const outdir = dirname(outfile);
  const { metafile } = await build({
    ...common,
    entryPoints: { [basename(outfile, extname(outfile))]: entry },
    outdir,
    outExtension: { '.js': extname(outfile) || '.js' },
    splitting: true,
    chunkNames: `${chunks}[hash]`,
    metafile: true,
  });
  // The chunks of earlier builds: their names are hashes of their content, so each build would
  // otherwise leave its own beside the new ones.
  const written = new Set(Object.keys(metafile.outputs).map((path) => basename(path)));
  for (const name of readdirSync(outdir)) {
    if (name.startsWith(chunks) && !written.has(name)) rmSync(join(outdir, name), { force: true });
  }
  for (const [thread, source] of [
    ['sqlite-writer', 'src/store/sqlite/writer-thread.ts'],
    ['sqlite-reader', 'src/store/sqlite/reader-thread.ts'],
  ]) {
    await build({ ...common, entryPoints: [source], outfile: join(dirname(outfile), `${thread}.mjs`) });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildBundle(process.argv[2], process.argv[3]);
