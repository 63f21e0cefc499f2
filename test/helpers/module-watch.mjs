// Preloaded into a server a test starts (`node --import ./test/helpers/module-watch.mjs ...`): writes
// to MODULE_WATCH_FILE, one a line, what the process loads of node_modules/@opentelemetry/:
// `import SPECIFIER from PARENT` for each import of such a package by a module outside node_modules
// (the service's own code), and the path of every such module loaded, ES modules (through
// module-watch-hooks.mjs) and CommonJS files (read from require.cache as the process exits); of a
// bundle, which carries the packages in its own files, `FOLDER in FILE` for each package folder a
// file it loads carries modules of.
import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

const file = process.env.MODULE_WATCH_FILE;
if (file === undefined) throw new Error('module-watch.mjs needs MODULE_WATCH_FILE');
// The service's worker threads (SQLite's) inherit the preload; the main thread is the one watched.
if (isMainThread) {
  register('./module-watch-hooks.mjs', import.meta.url, { data: { file } });
  const require = createRequire(import.meta.url);
  process.on('exit', () => {
    const loaded = Object.keys(require.cache).filter((path) => path.includes('/node_modules/@opentelemetry/'));
    appendFileSync(file, loaded.map((path) => `${path}\n`).join(''));
  });
}
