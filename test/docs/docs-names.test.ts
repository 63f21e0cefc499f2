// Every file and setting the docs name exists. docs/comparison.md said "no admin page yet" long after
// /admin was served; a page that names a file or a setting that is gone misleads in the same way.
// Each page is read for: paths from the top folders (`src/...`, `test/...`, `docs/...`), file names
// in backticks (`health.ts`, `http/errors.ts`), and upper-case names with an underscore
// (`DATABASE_URL`, `PROBLEM_CASES`) or assigned in a command (`PORT=8080`). OpenTelemetry's standard
// variables (`OTEL_SERVICE_NAME`) are read by its SDK: named in the SDK's code is enough for them.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { SETTINGS } from '../../src/config/settings.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

const PAGES = [
  'README.md',
  'admin/README.md',
  'bench/README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
  ...readdirSync(join(ROOT, 'src'))
    .filter((name) => existsSync(join(ROOT, 'src', name, 'README.md')))
    .map((name) => `src/${name}/README.md`),
];

/** Every file of the repository but what is installed or built. */
const FILES = readdirSync(ROOT, { recursive: true, encoding: 'utf8' }).filter(
  (path) => !/(^|\/)(node_modules|\.git|dist|\.tmp)(\/|$)/.test(path),
);
const CODE = FILES.filter(
  (path) => /\.(ts|tsx|mjs|js)$/.test(path) || path === 'package.json' || path === '.ci/run',
).map(read);
/** Upper-case names the code declares (`const PROBLEMS`), and the environment variables it reads or sets. */
const DECLARED = new Set(
  CODE.flatMap((text) => [
    ...text.matchAll(/\b(?:const|let|function|class|enum|type|interface)\s+([A-Z][A-Z0-9_]+)\b/g),
  ]).map((match) => match[1]),
);
const ENVIRONMENT = new Set(
  CODE.flatMap((text) => [
    // Read (`env.NAME`), set in a command (`NAME=value`), or set for a child process (`NAME: 'value'`).
    ...text.matchAll(/\benv(?:\.|\[['"])([A-Z][A-Z0-9_]+)\b|(?:^|\s)([A-Z][A-Z0-9_]+)=|\b([A-Z][A-Z0-9_]+): ['"`]/gm),
  ]).map((match) => match[1] ?? match[2] ?? match[3]),
);
const SETTING_NAMES = new Set(Object.values(SETTINGS).map((setting) => setting.env));
/**
 * The code of the installed OpenTelemetry SDK, which reads the standard `OTEL_*` variables itself
 * (docs/operations.md#traces): a page may name one of those when the SDK's code names it.
 */
const OTEL_SDK = ['core', 'sdk-trace-base', 'otlp-exporter-base', 'resources']
  .map((pkg) => `node_modules/@opentelemetry/${pkg}/build/src`)
  .flatMap((dir) =>
    readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.js'))
      .map((file) => read(join(dir, file))),
  )
  .join('\n');
const sdkReads = (name: string) => name.startsWith('OTEL_') && OTEL_SDK.includes(`'${name}'`);

/** What a page may name that is neither in the repository nor in the code, and why. */
const EXCEPTIONS: ReadonlyArray<{ page: string; name: string; reason: string }> = [
  {
    page: 'docs/comparison.md',
    name: 'bench/results/NAME.json',
    reason: 'a placeholder in a command: the run named by --name',
  },
  { page: 'docs/comparison.md', name: 'db.json', reason: "json-server's data file, not ours" },
  { page: 'docs/comparison.md', name: 'FAILED_VALIDATION', reason: "an error code of Directus's" },
  { page: 'docs/comparison.md', name: 'MAX_PAYLOAD_SIZE', reason: "a setting of Directus's, not set by the bench" },
  { page: 'docs/performance.md', name: 'bench/results/mine.*', reason: 'what a reader’s own narrowed run writes' },
  {
    page: 'docs/performance.md',
    name: 'bench/peers/directus/node_modules',
    reason: 'installed by the bench on first use, never committed',
  },
  { page: 'docs/security.md', name: 'SQLITE_CORRUPT', reason: "an error code of SQLite's" },
  {
    page: 'docs/operations.md',
    name: 'POSTGRES_PASSWORD',
    reason: "the PostgreSQL image's setting, which deploy/compose.yaml reads (also set in its command)",
  },
];

/** Paths from the top folders, as a page writes them (a trailing dot or anchor is not part of one). */
function paths(text: string): string[] {
  const found = text.matchAll(/(?<![\w./-])(?:src|test|docs|scripts|bench|admin|client|bin|\.ci)\/[\w.*/-]*[\w*/]/g);
  return [...found].map(([path]) => path.replace(/\.+$/, ''));
}

/** File names in backticks that are not paths from the top (`health.ts`, `http/errors.ts`). */
function fileNames(text: string): string[] {
  const found = text.matchAll(/`([\w.-]+(?:\/[\w.-]+)*\.(?:ts|tsx|mjs|js|json|md|css|html|svg|yaml))`/g);
  return [...found]
    .map((match) => match[1] ?? '')
    .filter((name) => !/^(src|test|docs|scripts|bench|admin|client|bin)\//.test(name));
}

function pathExists(path: string): boolean {
  if (!path.includes('*')) return existsSync(join(ROOT, path));
  const pattern = new RegExp(`^${path.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replaceAll('*', '[^/]*')}$`);
  return FILES.some((file) => pattern.test(file));
}

/** A bare name exists beside the page or anywhere in the repository under its folder and name. */
function fileExists(page: string, name: string): boolean {
  return (
    existsSync(join(ROOT, dirname(page), name)) || FILES.some((file) => file === name || file.endsWith(`/${name}`))
  );
}

/** Upper-case names with an underscore, and those assigned in a command (`PORT=8080`). */
function upperNames(text: string): { named: string[]; assigned: string[] } {
  const named = [...text.matchAll(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g)].map(([name]) => name);
  const assigned = [...text.matchAll(/(?<![\w$.-])([A-Z][A-Z0-9_]+)=/g)].map((match) => match[1] ?? '');
  return { named, assigned };
}

const excepted = (page: string, name: string) => EXCEPTIONS.some((row) => row.page === page && row.name === name);

describe('every file and setting the docs name exists', () => {
  for (const page of PAGES) {
    const text = read(page);

    it(`${page}: every path and file name is in the repository`, () => {
      const gone = [
        ...paths(text).filter((path) => !pathExists(path)),
        ...fileNames(text).filter((name) => !fileExists(page, name)),
      ].filter((name) => !excepted(page, name));
      assert.deepEqual([...new Set(gone)], [], `${page} names files that do not exist`);
    });

    it(`${page}: every setting is in src/config/settings.ts (or the name is the code's)`, () => {
      const { named, assigned } = upperNames(text);
      // A name set in a command is a setting or an environment variable the code reads.
      const unknown = [
        ...assigned
          .filter((name) => !SETTING_NAMES.has(name) && !ENVIRONMENT.has(name))
          .map((name) => `${name}= (set in a command)`),
        ...named.filter((name) => !SETTING_NAMES.has(name) && !DECLARED.has(name) && !ENVIRONMENT.has(name)),
      ].filter((name) => !excepted(page, name.split('=')[0] ?? name) && !sdkReads(name.split('=')[0] ?? name));
      assert.deepEqual([...new Set(unknown)], [], `${page} names settings or constants that do not exist`);
    });
  }

  it('every exception is still needed', () => {
    for (const row of EXCEPTIONS) {
      assert.ok(read(row.page).includes(row.name), `${row.page} no longer names ${row.name}: drop the exception`);
      assert.ok(
        !pathExists(row.name) && !SETTING_NAMES.has(row.name) && !DECLARED.has(row.name) && !ENVIRONMENT.has(row.name),
        `${row.name} exists now: drop the exception`,
      );
    }
  });
});
