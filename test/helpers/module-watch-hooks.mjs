// The hooks of module-watch.mjs, run on Node's loader thread.
import { appendFileSync } from 'node:fs';

let file;

export function initialize(data) {
  file = data.file;
}

export async function resolve(specifier, context, next) {
  if (specifier.startsWith('@opentelemetry/') && !String(context.parentURL).includes('/node_modules/')) {
    appendFileSync(file, `import ${specifier} from ${context.parentURL}\n`);
  }
  return next(specifier, context);
}

/**
 * esbuild's comment above each module a bundle carries: the module's path, from the folder it was
 * built in (`node_modules/...`, or `../x/node_modules/...` where node_modules is a link elsewhere).
 */
const BUNDLED = /^\/\/ ((?:\S*\/)?node_modules\/@opentelemetry\/[^/]+\/)\S*$/gm;

export async function load(url, context, next) {
  const loaded = await next(url, context);
  if (url.includes('/node_modules/@opentelemetry/')) appendFileSync(file, `${url}\n`);
  else if (url.startsWith('file:') && loaded.source != null) {
    // A file of a bundle: the packages' folders it carries modules of, once each.
    const folders = new Set([...String(loaded.source).matchAll(BUNDLED)].map((match) => match[1]));
    for (const folder of folders) appendFileSync(file, `${folder} in ${url}\n`);
  }
  return loaded;
}
