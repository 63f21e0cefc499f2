import { Worker } from 'node:worker_threads';

/** A folder of built thread bundles to use while the code runs from its TypeScript source. */
let builtThreads: URL | undefined;

/**
 * Runs the threads from `folder`'s `sqlite-writer.mjs` and `sqlite-reader.mjs`, built from this same
 * source (the test runner builds them once): a thread that starts from the source loads tsx and
 * its modules anew, about twice the CPU of a whole store's opening from bundles.
 */
export function useBuiltThreads(folder: URL): void {
  builtThreads = folder;
}

/**
 * Starts one of the store's worker threads: the bundle's `<name>.mjs` beside it once built; from the
 * TypeScript source (development, tests), `source` through tsx, whose loader a worker thread does
 * not inherit on Node 20, so it is registered there first.
 */
export function startThread(name: 'sqlite-writer' | 'sqlite-reader', source: string, data: unknown): Worker {
  const options = { workerData: data, name };
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL(`./${name}.mjs`, import.meta.url), options);
  // Without the process's own --import preloads: tsx's among them, which a thread cannot run.
  if (builtThreads !== undefined) return new Worker(new URL(`${name}.mjs`, builtThreads), { ...options, execArgv: [] });
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  const entry = JSON.stringify(new URL(source, import.meta.url).href);
  const code = `import(${tsx}).then(({ register }) => { register(); return import(${entry}); })`;
  return new Worker(code, { ...options, eval: true });
}
