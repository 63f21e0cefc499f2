// Bundles src/ into ES modules for `npm start`: server.mjs, and sqlite-writer.mjs beside it (the
// SQLite writer's worker thread, which the server starts from its own folder). Packages stay
// external, loaded from node_modules. `node scripts/build.mjs OUTFILE` writes elsewhere than
// dist/server.mjs (the tests and the benchmark do, so that they never race a running `npm start`);
// `node scripts/build.mjs OUTFILE src/cli.ts` bundles the command line instead (the tests run it).
import { dirname, join } from 'node:path';
import { build } from 'esbuild';

const outfile = process.argv[2] ?? 'dist/server.mjs';
const entry = process.argv[3] ?? 'src/server.ts';
const common = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  packages: 'external',
  target: 'node20',
  logLevel: 'warning',
};

await build({ ...common, entryPoints: [entry], outfile });
await build({
  ...common,
  entryPoints: ['src/store/sqlite/writer-thread.ts'],
  outfile: join(dirname(outfile), 'sqlite-writer.mjs'),
});
