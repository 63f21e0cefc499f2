import { Worker } from 'node:worker_threads';

/**
 * Starts one of the store's worker threads: the bundle's `<name>.mjs` beside it once built; from the
 * TypeScript source (development, tests), `source` through tsx, whose loader a worker thread does
 * not inherit on Node 20, so it is registered there first.
 */
export function startThread(name: 'sqlite-writer' | 'sqlite-reader', source: string, data: unknown): Worker {
  const options = { workerData: data, name };
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL(`./${name}.mjs`, import.meta.url), options);
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  const entry = JSON.stringify(new URL(source, import.meta.url).href);
  const code = `import(${tsx}).then(({ register }) => { register(); return import(${entry}); })`;
  return new Worker(code, { ...options, eval: true });
}
