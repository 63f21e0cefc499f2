// Bundles src/ into one ES module for `npm start`; packages stay external, loaded from node_modules.
// `node scripts/build.mjs OUTFILE` writes elsewhere than dist/server.mjs (the tests and the benchmark
// do, so that they never race a running `npm start`).
import { build } from 'esbuild';

await build({
  entryPoints: ['src/server.ts'],
  bundle: true,
  platform: 'node',
  format: 'esm',
  packages: 'external',
  target: 'node20',
  outfile: process.argv[2] ?? 'dist/server.mjs',
  logLevel: 'warning',
});
