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

export async function load(url, context, next) {
  if (url.includes('/node_modules/@opentelemetry/')) appendFileSync(file, `${url}\n`);
  return next(url, context);
}
