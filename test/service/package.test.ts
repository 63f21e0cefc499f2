// The package, run the way production runs it: `npm pack`, then installed elsewhere, as a tool
// (`npm install -g --prefix`) and as deploy/Dockerfile installs it (deploy/image.sh), and each run from
// there: import, serve, /docs and /admin with their files, the image's HEALTHCHECK, a clean stop, and
// nothing written into the installed package.
//
// Not seconds: the image's pack step installs every dependency (`npm ci`), and the tool's install
// builds better-sqlite3 from source (no prebuilt binary can be downloaded here). Measured on the
// 2-core machine: pack 38 to 48 s, the tool's install 19 s when ccache holds SQLite's objects (as in
// CI, whose own npm ci filled it) and 118 s when it does not, the image's install 7 to 13 s. It runs
// in `npm test`; alone:
//   npm test -- test/service/package.test.ts
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { copyCheckout, copyNativeModule, gitAvailable, listing, run } from '../helpers/installed.ts';
import { startServer, tempDir } from '../helpers/server.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
const TGZ = `${pkg.name}-${pkg.version}.tgz`;
const NPM_QUIET = { npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };
const PEOPLE = '{"name":"Alice","age":30,"city":"Paris"}\n{"name":"Bob","age":25,"city":"Berlin"}\n';

/** The instructions of a Dockerfile, continuation lines joined, comments left out. */
function dockerfile(text: string): Array<{ op: string; args: string }> {
  return text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.trimStart().startsWith('#'))
    .map((line) => {
      const [op = '', ...rest] = line.trim().split(/\s+/);
      return { op: op.toUpperCase(), args: rest.join(' ') };
    });
}
const DOCKERFILE = dockerfile(readFileSync(join(ROOT, 'deploy', 'Dockerfile'), 'utf8'));
/** The last stage: what the image runs. */
const FINAL = DOCKERFILE.slice(DOCKERFILE.findLastIndex((step) => step.op === 'FROM'));
const last = (op: string) => FINAL.findLast((step) => step.op === op)?.args ?? '';

/**
 * Runs the installed package's command `bin` (a path, run by node) from an empty folder: imports a
 * small NDJSON file, serves it, checks the pages and their files, stops it; then checks that the
 * installed package (`installed`) is as it was. Returns the server's port for further checks.
 */
async function exercise(
  bin: string,
  installed: string,
  env: Record<string, string>,
  whileServing?: (port: number) => void,
): Promise<void> {
  const work = tempDir('user-records-run-');
  try {
    const before = listing(installed);
    writeFileSync(join(work.dir, 'people.ndjson'), PEOPLE);
    const version = run(process.execPath, [bin, '--version'], { cwd: work.dir, env });
    assert.equal(version, `${pkg.version}\n`);
    const imported = run(process.execPath, [bin, 'import', 'people.ndjson', '--quiet'], { cwd: work.dir, env });
    assert.equal(imported, 'imported 2 records (ids 1 to 2)\n');

    const server = await startServer(env, 60_000, [], [bin, 'serve'], work.dir);
    try {
      const users = await fetch(`${server.url}/users`);
      assert.equal(
        await users.text(),
        '{"data":[{"name":"Alice","age":"30","city":"Paris"},{"name":"Bob","age":"25","city":"Berlin"}]}',
      );
      for (const page of ['/docs', '/admin']) await assertPageWhole(server.url, page);
      whileServing?.(Number(new URL(server.url).port));
    } finally {
      assert.equal(await server.stop('SIGTERM'), 0, server.logs.join('\n'));
    }
    assert.deepEqual(listing(installed), before, 'files in the installed package changed while it ran');
  } finally {
    work.cleanup();
  }
}

/** The page answers 200 with HTML, and so does every file of this service it names (scripts, styles, icons). */
async function assertPageWhole(base: string, path: string): Promise<void> {
  const page = await fetch(`${base}${path}`);
  assert.equal(page.status, 200, path);
  assert.match(page.headers.get('content-type') ?? '', /^text\/html/, path);
  const html = await page.text();
  const files = [...html.matchAll(/(?:src|href)="([^"#]+)"/g)]
    .map((match) => new URL(match[1] as string, page.url))
    .filter((url) => url.origin === base);
  assert.ok(files.length >= 2, `${path} names ${files.length} files of its own`);
  for (const file of files) {
    const answer = await fetch(file);
    assert.equal(answer.status, 200, `${file.pathname}, named by ${path}`);
    assert.ok((await answer.arrayBuffer()).byteLength > 0, `${file.pathname} is empty`);
  }
}

const skip = gitAvailable()
  ? false
  : 'SKIPPED: the repository is not a git checkout (its files are listed with git ls-files)';

describe('the package as npm pack makes it, installed elsewhere', { skip, timeout: 2_700_000 }, () => {
  const scratch = tempDir('user-records-pack-');
  const pkgDir = join(scratch.dir, 'pkg');
  let files: string[] = [];
  before(async () => {
    const started = Date.now();
    const checkout = join(scratch.dir, 'checkout');
    copyCheckout(checkout);
    // The image's first stage: `npm ci`, then `npm pack`.
    run('sh', ['deploy/image.sh', 'pack', pkgDir], { cwd: checkout, env: NPM_QUIET });
    files = run('tar', ['-tzf', join(pkgDir, TGZ)], { cwd: scratch.dir })
      .trim()
      .split('\n');
    console.log(`# packed ${TGZ} (${files.length} files) in ${Date.now() - started} ms`);
  });
  after(() => scratch.cleanup());

  it('carries the bundle and its command, and no sources, tests or benchmark', () => {
    const outside = files.filter(
      (file) => !/^package\/(package\.json|README\.md|bin\/user-records\.mjs|dist\/cli\/[\w-]+\.mjs)$/.test(file),
    );
    assert.deepEqual(outside, []);
    for (const needed of [
      'bin/user-records.mjs',
      'dist/cli/user-records.mjs',
      'dist/cli/sqlite-writer.mjs',
      'dist/cli/sqlite-reader.mjs',
    ])
      assert.ok(files.includes(`package/${needed}`), needed);
  });

  it('installed as a tool (npm install -g --prefix), imports and serves from any folder, writing nothing into itself', async (t) => {
    const prefix = join(scratch.dir, 'prefix');
    const started = Date.now();
    run('npm', ['install', '-g', '--prefix', prefix, '--allow-scripts=better-sqlite3,esbuild', join(pkgDir, TGZ)], {
      cwd: scratch.dir,
      env: NPM_QUIET,
      // The build from source took 2 to over 10 minutes on the 2-core machine, busy with other work,
      // without ccache.
      timeoutMs: 1_500_000,
    });
    const installed = join(prefix, 'lib', 'node_modules', pkg.name);
    t.diagnostic(`installed as a tool, better-sqlite3 built, in ${Date.now() - started} ms`);
    const data = tempDir('user-records-data-');
    try {
      // The command npm linked, as a person runs it: the shebang finds node on PATH.
      const linked = run(join(prefix, 'bin', 'user-records'), ['--version'], { cwd: data.dir });
      assert.equal(linked, `${pkg.version}\n`);
      await exercise(join(installed, 'bin', 'user-records.mjs'), installed, {
        DATABASE_URL: join(data.dir, 'users.db'),
        HOST: '127.0.0.1',
        PORT: '0',
      });
    } finally {
      data.cleanup();
    }
  });

  it('installed as deploy/Dockerfile does (deploy/image.sh install), runs its CMD and passes its HEALTHCHECK', async (t) => {
    const app = join(scratch.dir, 'app');
    const started = Date.now();
    // Scripts skipped, and the repository's compiled better-sqlite3 (same version, same Node) copied in:
    // the tool's install above shows that it builds, a second build would show nothing more.
    run('sh', [join(ROOT, 'deploy', 'image.sh'), 'install', join(pkgDir, TGZ), join(ROOT, 'package-lock.json'), app], {
      cwd: scratch.dir,
      env: { ...NPM_QUIET, npm_config_ignore_scripts: 'true', npm_config_prefer_offline: 'true' },
    });
    copyNativeModule(join(app, 'node_modules'));
    t.diagnostic(`installed as the image does in ${Date.now() - started} ms (scripts skipped)`);

    // The last stage's settings, its data folder standing in for the volume, on loopback for the test.
    const volume = last('VOLUME');
    const env = Object.fromEntries(
      FINAL.filter((step) => step.op === 'ENV').flatMap((step) =>
        step.args.split(/\s+/).map((pair) => pair.split('=')),
      ),
    ) as Record<string, string>;
    assert.match(env.DATABASE_URL ?? '', new RegExp(`^file:${volume}/`), 'the database lives in the volume');
    const data = tempDir('user-records-volume-');
    mkdirSync(join(data.dir, 'volume'));
    const [command, ...args] = JSON.parse(last('CMD')) as string[];
    assert.equal(command, 'node');
    assert.equal(last('WORKDIR'), '/app');
    const healthcheck = JSON.parse(last('HEALTHCHECK').replace(/^.*?CMD\s+/, '')) as string[];
    assert.equal(healthcheck[0], 'node');
    try {
      await exercise(
        join(app, args[0] as string),
        app,
        {
          ...env,
          DATABASE_URL: (env.DATABASE_URL as string).replace(volume, join(data.dir, 'volume')),
          HOST: '127.0.0.1',
          PORT: '0',
        },
        (port) => run(process.execPath, healthcheck.slice(1), { cwd: app, env: { PORT: String(port) } }),
      );
      assert.deepEqual(args.slice(1), ['serve']);
    } finally {
      data.cleanup();
    }
  });
});
