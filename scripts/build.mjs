// Bundles src/ into ES modules for `npm start`: server.mjs, and sqlite-writer.mjs and sqlite-reader.mjs
// beside it (the SQLite writer's and readers' worker threads, which the server starts from its own
// folder). The packages are carried in the bundle too, but for the few that must stay in node_modules
// (see EXTERNAL). `node scripts/build.mjs OUTFILE` writes elsewhere than dist/server.mjs (the tests
// and the benchmark do, so that they never race a running `npm start`);
// `node scripts/build.mjs OUTFILE src/cli.ts` bundles the command line instead (the tests run it,
// and bin/user-records.mjs builds it into dist/cli/). The command line's bundle is split: what only
// `serve` needs (the HTTP side and its packages) is a chunk beside it, loaded when `serve` runs, so
// the other commands start in half the time and memory; the server's is split too (server-*.mjs).
// The admin page (admin/) is built here too, and its files carried inside the bundle.
// scripts/start.mjs (`npm start`) calls buildBundle in its own process before it runs the bundle.
import { readdirSync, readFileSync, rmSync } from 'node:fs';
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
 * The packages left in node_modules, loaded from there at run time. Every other package is carried
 * in the bundle: Node would otherwise find, read and compile their files one by one at every start
 * (hundreds of them: two fifths of a service's start-up CPU on its main thread). These stay:
 * - better-sqlite3: a native addon, which loads its compiled .node file from its own folder;
 * - pg-native: pg's optional native driver, loaded only if asked for (pg.native), and not installed.
 */
const EXTERNAL = /^(better-sqlite3|pg-native)(\/|$)/;
const externals = {
  name: 'externals',
  setup(bundle) {
    bundle.onResolve({ filter: /^[^./]/ }, (args) =>
      args.kind !== 'entry-point' && EXTERNAL.test(args.path) ? { path: args.path, external: true } : undefined,
    );
  },
};
/**
 * The bundled packages that read files of their own folder at run time, by __dirname (which a
 * bundle, an ES module, does not have), and what they are given instead:
 * - @fastify/swagger reads its package.json (a document's default title and version): it is
 *   carried in the bundle;
 * - @fastify/swagger-ui serves its static/ folder (the docs page's files) and reads its logo there:
 *   its folder is the installed package's, found from the bundle's folder as an import would be.
 * The others read no file of their own: prom-client reads /proc, pg and the OpenTelemetry exporter
 * the certificate files their settings name; pino would start a transport from its own folder, but
 * the service gives it none (its logs go to a stream, src/logs/output.ts).
 */
const OWN_FILES = [
  {
    file: /[\\/]node_modules[\\/]@fastify[\\/]swagger[\\/]lib[\\/]util[\\/]read-package-json\.js$/,
    // A fresh copy at every call, as the package's own parse of the file gives.
    contents: () => "module.exports = { readPackageJson: () => structuredClone(require('../../package.json')) };",
  },
  {
    file: /[\\/]node_modules[\\/]@fastify[\\/]swagger-ui[\\/](index|lib[\\/]routes)\.js$/,
    contents: (path) => {
      const folder = `require('node:path').dirname(require.resolve('@fastify/swagger-ui'))`;
      const own = basename(dirname(path)) === 'lib' ? `require('node:path').join(${folder}, 'lib')` : folder;
      return `const __dirname = ${own};\n${readFileSync(path, 'utf8')}`;
    },
  },
];
const ownFiles = {
  name: 'own-files',
  setup(bundle) {
    for (const { file, contents } of OWN_FILES) {
      bundle.onLoad({ filter: file }, (args) => ({
        contents: contents(args.path),
        loader: 'js',
        resolveDir: dirname(args.path),
      }));
    }
  },
};
const common = {
  bundle: true,
  plugins: [externals, ownFiles, adminAssets],
  // The bundled CommonJS packages require Node's own modules (and @fastify/swagger-ui's folder is
  // found) with it: an ES module has no require of its own.
  banner: {
    js: "import { createRequire as bundleRequire } from 'node:module'; const require = bundleRequire(import.meta.url);",
  },
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
