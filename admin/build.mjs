// Builds the admin page (admin/src, Preact) into the three files the service serves at /admin:
// the HTML, one script and one stylesheet (minified) and its icon. scripts/build.mjs runs it once when it bundles
// the server, which then carries the files in itself; the service run from source (tsx) builds
// them on the first request to /admin instead.
import { readFile } from 'node:fs/promises';
import { build } from 'esbuild';

const HERE = new URL('.', import.meta.url).pathname;

/** The page's files as text: `{ html, js, css, icon }`. */
export async function buildAdmin() {
  const result = await build({
    entryPoints: { app: `${HERE}src/main.tsx` },
    bundle: true,
    write: false,
    outdir: '/admin',
    format: 'esm',
    platform: 'browser',
    target: ['chrome109', 'firefox115', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
    absWorkingDir: HERE,
  });
  const file = (extension) => result.outputFiles.find((output) => output.path.endsWith(extension))?.text ?? '';
  return {
    html: await readFile(`${HERE}index.html`, 'utf8'),
    js: file('.js'),
    css: file('.css'),
    icon: await readFile(`${HERE}icon.svg`, 'utf8'),
  };
}
