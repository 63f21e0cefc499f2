import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { Launch } from '../child-server.ts';
import { findProcess, withChildren } from '../proc-stats.ts';
import { seedBatches, seedCities, seedRecord } from '../seed-data.ts';
import type { PeerId, SystemSpec } from '../systems.ts';
import type { WorkloadName } from '../workloads.ts';
import type { RequestPlan } from '../wrk.ts';

// Directus as an optional peer of the bench. It lives in bench/peers/directus/ with its own
// package.json and lock, installed on demand (ensureDirectus), never a dependency of the service.
// Every Directus process is started from @directus/api's CLI entry rather than the `directus` bin:
// the bin first asks the npm registry whether a newer version exists, on every start, and no
// setting turns that off; the entry behind it is the same CLI without that call.

/** The pinned version: the newest 11.x whose `engines` accepts Node 20 (11.4 and later ask for Node 22). */
export const DIRECTUS_VERSION = '11.3.5';
/** The admin user's static token, set at bootstrap (ADMIN_TOKEN); writes send it as a Bearer token. */
export const DIRECTUS_TOKEN = 'user-records-bench-directus-static-token';
/** The collection the records go in; Directus serves it at /items/users. */
export const DIRECTUS_COLLECTION = 'users';

const ROOT = new URL('../..', import.meta.url).pathname;
const ADMIN_EMAIL = 'admin@example.com';
const ADMIN_PASSWORD = 'user-records-bench';
// Signs Directus's own JWTs (none are used here: the static token is looked up as is).
const SECRET = 'user-records-bench-directus-secret';
const FIELDS = 'name,age,city';
const INSTALL_MARKER = '.user-records-install';
// npm ci with two native builds (sqlite3, isolated-vm) takes 2 to 3 minutes here.
const INSTALL_TIMEOUT_MS = 20 * 60_000;
const INSTALL_FREE_BYTES = 1.5e9;
const CLI_TIMEOUT_MS = 120_000;

export interface DirectusInstall {
  /** bench/peers/directus */
  dir: string;
  version: string;
}

/** bench/peers/directus under a checkout. */
export function directusDir(root = ROOT): string {
  return join(root, 'bench/peers/directus');
}

function lockHash(dir: string): string {
  return createHash('sha256')
    .update(readFileSync(join(dir, 'package-lock.json')))
    .digest('hex');
}

/** What is wrong with the install in `dir`, or undefined when it is complete for the current lock. */
function installProblem(dir: string): string | undefined {
  const modules = join(dir, 'node_modules');
  if (!existsSync(join(modules, INSTALL_MARKER))) return 'not installed';
  if (readFileSync(join(modules, INSTALL_MARKER), 'utf8').trim() !== lockHash(dir)) return 'package-lock.json changed';
  try {
    const version = (JSON.parse(readFileSync(join(modules, 'directus/package.json'), 'utf8')) as { version?: string })
      .version;
    if (version !== DIRECTUS_VERSION) return `node_modules has directus ${version}, not ${DIRECTUS_VERSION}`;
  } catch {
    return 'node_modules/directus is missing';
  }
  if (!existsSync(join(modules, 'sqlite3/build/Release/node_sqlite3.node'))) return 'the sqlite3 driver is not built';
  if (!existsSync(cliPath(dir))) return 'the Directus CLI is missing';
  return undefined;
}

function cliPath(dir: string): string {
  return join(dir, 'node_modules/@directus/api/dist/cli/run.js');
}

/** Whether a complete install for the current lock is in place (nothing is installed or checked online). */
export function directusInstalled(root = ROOT): boolean {
  return installProblem(directusDir(root)) === undefined;
}

/** The install, or an Error saying how to get one; for prepare(). */
function requireInstall(root: string): DirectusInstall {
  const dir = directusDir(root);
  const problem = installProblem(dir);
  if (problem !== undefined) throw new Error(`Directus is not ready (${problem}): call ensureDirectus() first`);
  return { dir, version: DIRECTUS_VERSION };
}

/** Runs `npm ci` in `dir`, passing npm's lines to `log` with a heartbeat; resolves with a failure reason or undefined. */
function npmCi(dir: string, log: (line: string) => void): Promise<string | undefined> {
  return new Promise((resolve) => {
    const began = Date.now();
    const tail: string[] = [];
    // Without the npm_* variables an outer `npm run bench` sets, so the outer project's config
    // (its prefix, its package) cannot leak into this install.
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
    const child = spawn('npm', ['ci', '--no-audit', '--no-fund'], {
      cwd: dir,
      env: { ...env, npm_config_update_notifier: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, so a timeout ends npm and the native builds it started, and nothing else.
      detached: true,
    });
    const killGroup = () => {
      if (child.pid !== undefined && child.exitCode === null) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
    };
    process.once('exit', killGroup);
    let pending = '';
    const onData = (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (line.trim() === '') continue;
        log(`  npm: ${line}`);
        tail.push(line);
        if (tail.length > 20) tail.shift();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    // npm says little until it is done (the native builds of sqlite3 and isolated-vm take most of the time).
    const heartbeat = setInterval(() => {
      log(`  … still installing Directus (${Math.round((Date.now() - began) / 1000)} s)`);
    }, 10_000);
    const timer = setTimeout(() => {
      log(`  npm ci still running after ${INSTALL_TIMEOUT_MS / 60_000} min: stopping it`);
      killGroup();
    }, INSTALL_TIMEOUT_MS);
    const finish = (reason: string | undefined) => {
      clearInterval(heartbeat);
      clearTimeout(timer);
      process.removeListener('exit', killGroup);
      resolve(reason);
    };
    child.once('error', (error) => finish(`npm could not be run: ${error.message}`));
    child.once('close', (code, signal) => {
      if (code === 0) {
        log(`  npm ci done in ${Math.round((Date.now() - began) / 1000)} s`);
        finish(undefined);
      } else {
        finish(`npm ci in bench/peers/directus failed (${signal ?? `exit ${code}`}):\n    ${tail.join('\n    ')}`);
      }
    });
  });
}

/**
 * Makes sure Directus is installed in bench/peers/directus (npm ci from its lock, a one-time
 * ~470 MB install with two native builds), printing progress to `log`. Resolves with the install,
 * or with the reason it cannot be had (for the bench's skipped list).
 */
export async function ensureDirectus(log: (line: string) => void, root = ROOT): Promise<DirectusInstall | string> {
  const dir = directusDir(root);
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  if (major < 18 || (major === 18 && minor < 17)) {
    return `Directus ${DIRECTUS_VERSION} needs Node 18.17 or later (this is ${process.version})`;
  }
  if (!existsSync(join(dir, 'package-lock.json'))) return 'bench/peers/directus/package-lock.json is missing';
  const problem = installProblem(dir);
  if (problem === undefined) return { dir, version: DIRECTUS_VERSION };
  try {
    const free = statfsSync(dir);
    if (free.bavail * free.bsize < INSTALL_FREE_BYTES) {
      return `Directus needs about 470 MB installed (1.5 GB free while npm works); ${dir} has ${Math.round((free.bavail * free.bsize) / 1e6)} MB free`;
    }
  } catch {
    // statfs unavailable: let npm find out.
  }
  log(
    `Directus ${DIRECTUS_VERSION} (${problem}): one-time install into bench/peers/directus/node_modules ` +
      '(npm ci, about 470 MB, 2 to 3 minutes with native builds)',
  );
  const failure = await npmCi(dir, log);
  if (failure !== undefined) return failure;
  writeFileSync(join(dir, 'node_modules', INSTALL_MARKER), `${lockHash(dir)}\n`);
  const after = installProblem(dir);
  return after === undefined ? { dir, version: DIRECTUS_VERSION } : `Directus is not usable after npm ci: ${after}`;
}

// ---------------------------------------------------------------------------------------------
// Settings and bootstrap

/**
 * The environment of every Directus process: the instance's files under `dir`, and the settings
 * that make the run fair (NOTES.md gives each one's documentation page).
 */
function directusEnv(dir: string, db: Record<string, string>): Record<string, string> {
  return {
    ...db,
    SECRET,
    // No .env file is read: every setting is given here.
    CONFIG_PATH: join(dir, 'directus-none.env'),
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    LOG_STYLE: 'raw',
    // Output caching off (its default); the schema cache stays on (its default), as it is part of
    // Directus's normal request path, not an answer cache.
    CACHE_ENABLED: 'false',
    CACHE_SCHEMA: 'true',
    RATE_LIMITER_ENABLED: 'false',
    RATE_LIMITER_GLOBAL_ENABLED: 'false',
    // On by default: answers 503 "Under pressure" while event-loop utilisation is above 0.99 or its
    // delay above 500 ms. It did not trip in 8 s runs at 10 connections here, but a saturating load
    // or a long listing can trip it, and no other system sheds load that way.
    PRESSURE_LIMITER_ENABLED: 'false',
    TELEMETRY: 'false',
    // The API only: no Data Studio, no websockets, no check of a mail transport at start.
    SERVE_APP: 'false',
    WEBSOCKETS_ENABLED: 'false',
    EMAIL_VERIFY_SETUP: 'false',
    METRICS_ENABLED: 'false',
    PACKAGE_FILE_LOCATION: dir,
    EXTENSIONS_PATH: join(dir, 'extensions'),
    STORAGE_LOCAL_ROOT: join(dir, 'uploads'),
    TEMP_PATH: join(dir, 'directus-tmp'),
  };
}

/** The folders and package.json Directus looks for in its project folder (else it warns at each start). */
function instanceDir(dir: string): void {
  for (const sub of ['extensions', 'uploads', 'directus-tmp']) mkdirSync(join(dir, sub), { recursive: true });
  const pkg = join(dir, 'package.json');
  if (!existsSync(pkg)) writeFileSync(pkg, '{ "name": "directus-bench-instance", "private": true }\n');
}

/** One Directus CLI command (bootstrap, schema apply), bounded in time; rejects with its output. */
function directusCli(install: DirectusInstall, cwd: string, args: string[], env: Record<string, string>) {
  return new Promise<void>((resolve, reject) => {
    execFile(
      process.execPath,
      [cliPath(install.dir), ...args],
      {
        cwd,
        env: { ...process.env, ...env },
        timeout: CLI_TIMEOUT_MS,
        killSignal: 'SIGKILL',
        maxBuffer: 16 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        if (error === null) return resolve();
        const output = `${stdout}${stderr}`.trim().split('\n').slice(-15).join('\n  ');
        reject(new Error(`directus ${args.join(' ')} failed (${error.message.split('\n')[0]}):\n  ${output}`));
      },
    );
  });
}

/**
 * Installs Directus's system tables and the first admin (with the static token) into an empty
 * database, then creates the `users` collection from users-schema.json with Directus's own
 * `schema apply`.
 */
async function bootstrap(install: DirectusInstall, dir: string, db: Record<string, string>): Promise<void> {
  instanceDir(dir);
  const env = {
    ...directusEnv(dir, db),
    ADMIN_EMAIL,
    ADMIN_PASSWORD,
    ADMIN_TOKEN: DIRECTUS_TOKEN,
  };
  await directusCli(install, dir, ['bootstrap'], env);
  await directusCli(install, dir, ['schema', 'apply', '--yes', join(install.dir, 'users-schema.json')], env);
}

// The public policy (the one given to requests without a token) may read `users`, so GETs need no
// token: the contract has no authentication, and the bench's ready probe and listing check send none.
const PUBLIC_POLICY = 'SELECT policy FROM directus_access WHERE role IS NULL AND "user" IS NULL';
const GRANT_READ =
  'INSERT INTO directus_permissions (collection, action, permissions, validation, presets, fields, policy) ' +
  "VALUES ('users', 'read', '{}', NULL, NULL, '*', ?)";
const COLLECTION_EXISTS = "SELECT 1 AS found FROM directus_collections WHERE collection = 'users'";

// ---------------------------------------------------------------------------------------------
// SQLite

// The bootstrapped, empty database, built once per process and copied for each stage (bootstrap
// and schema apply take about 5 s; the copy is a few hundred KB).
let sqliteTemplate: Promise<Buffer> | undefined;

async function buildSqliteTemplate(install: DirectusInstall, dir: string): Promise<Buffer> {
  const file = join(dir, 'directus-template.db');
  rmSync(file, { force: true });
  await bootstrap(install, dir, { DB_CLIENT: 'sqlite3', DB_FILENAME: file });
  const db = new Database(file);
  try {
    if (db.prepare(COLLECTION_EXISTS).get() === undefined) throw new Error('schema apply created no users collection');
    const row = db.prepare(PUBLIC_POLICY).get() as { policy: string } | undefined;
    if (row === undefined) throw new Error('Directus bootstrap made no public policy');
    db.prepare(GRANT_READ).run(row.policy);
  } finally {
    db.close();
  }
  const bytes = readFileSync(file);
  rmSync(file, { force: true });
  return bytes;
}

export interface DirectusOptions {
  /**
   * SQLite journal mode of the Directus database file. Directus sets none, so SQLite's default
   * rollback journal (`delete`) is what it runs with; `wal` is the service's own mode.
   */
  sqliteJournal?: 'delete' | 'wal';
}

/** Copies the template to `file` and inserts `count` seeded records in one transaction. */
function seedSqlite(template: Buffer, file: string, count: number, journal: 'delete' | 'wal'): void {
  writeFileSync(file, template);
  const db = new Database(file);
  try {
    if (journal === 'wal') db.pragma('journal_mode = WAL');
    const insert = db.prepare('INSERT INTO users (name, age, city) VALUES (?, ?, ?)');
    db.transaction(() => {
      for (let i = 1; i <= count; i++) {
        const record = seedRecord(i);
        insert.run(record.name, record.age, record.city);
      }
    })();
  } finally {
    db.close();
  }
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL

const PG_TEMPLATE_DB = 'directus_template';
const PG_BENCH_DB = 'directus_bench';
const pgTemplates = new Map<string, Promise<void>>();

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A fresh database on the cluster (its own database, so Directus's `users` never meets the service's). */
async function freshDatabase(url: string, name: string, template?: string): Promise<string> {
  await withClient(url, async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${name}${template === undefined ? '' : ` TEMPLATE ${template}`}`);
  });
  return withDatabase(url, name);
}

async function buildPgTemplate(install: DirectusInstall, dir: string, url: string): Promise<void> {
  const templateUrl = await freshDatabase(url, PG_TEMPLATE_DB);
  await bootstrap(install, dir, { DB_CLIENT: 'pg', DB_CONNECTION_STRING: templateUrl });
  await withClient(templateUrl, async (client) => {
    if ((await client.query(COLLECTION_EXISTS)).rowCount !== 1)
      throw new Error('schema apply created no users collection');
    const policy = (await client.query<{ policy: string }>(PUBLIC_POLICY)).rows[0]?.policy;
    if (policy === undefined) throw new Error('Directus bootstrap made no public policy');
    await client.query(GRANT_READ.replace('?', '$1'), [policy]);
  });
}

/**
 * The PIDs doing PostgreSQL's work for the URL's port (postmaster and backends); the same rule as
 * bench/postgres.ts, kept here so this module does not load the service's store code.
 */
function postgresPids(url: string): () => number[] {
  const port = new URL(url).port;
  let postmaster: number | undefined;
  return () => {
    postmaster ??= findProcess((argv) => (argv[0] ?? '').endsWith('postgres') && argv.join(' ').includes(`-p ${port}`));
    return postmaster === undefined ? [] : withChildren(postmaster);
  };
}

async function seedPostgres(url: string, count: number): Promise<void> {
  await withClient(url, async (client) => {
    // The records of seedRecord(i), in order, so ids 1..count from the serial are the same.
    for (const { records } of seedBatches(count)) {
      await client.query(
        `INSERT INTO users (name, age, city)
         SELECT name, age, city FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS seeded (name, age, city, n)
         ORDER BY n`,
        [records.map((r) => r.name), records.map((r) => r.age), records.map((r) => r.city)],
      );
    }
    await client.query('ANALYZE users');
  });
}

// ---------------------------------------------------------------------------------------------
// Requests

/** The bench's workloads Directus has an equivalent of (the service's query workloads have none here). */
export type DirectusWorkload = Extract<WorkloadName, 'create' | 'list' | 'page' | 'read' | 'mix' | 'healthz'>;
const DIRECTUS_WORKLOADS: readonly WorkloadName[] = ['create', 'list', 'page', 'read', 'mix', 'healthz'];

/**
 * Directus's paths for each workload. `fields=name,age,city` makes every answer carry the
 * contract's keys in the contract's order: the `list` answer is byte for byte the service's
 * `GET /users`. A single item (read, create) is `{"data":{...}}`, where the service answers
 * `{"data":[{...}]}`.
 */
export const DIRECTUS_PATHS = {
  /** Answers 200 without a token once Directus serves the collection. */
  ready: `/items/users?fields=id&limit=1`,
  create: `/items/users?fields=${FIELDS}`,
  read: (id: number) => `/items/users/${id}?fields=${FIELDS}`,
  page: `/items/users?fields=${FIELDS}&limit=100`,
  list: `/items/users?fields=${FIELDS}&limit=-1`,
} as const;

export const DIRECTUS_AUTH_HEADER = { authorization: `Bearer ${DIRECTUS_TOKEN}` } as const;

export interface DirectusRequestOptions {
  /**
   * How reads authenticate: `token` (the default) sends the admin static token, as creates do;
   * `public` sends none and is served under the public policy's read permission. Measured here,
   * `token` reads are the faster of the two (the admin bypasses permission filtering, at the cost
   * of a token lookup), so the default gives Directus its better figure.
   */
  readAuth?: 'token' | 'public';
}

/** Creates with names never sent before in this run, as a JSON body with the admin token. */
function directusCreate(): NonNullable<RequestPlan['create']> {
  return {
    method: 'POST',
    path: DIRECTUS_PATHS.create,
    body: '{"name":"bench{n}","age":"{age}","city":{city}}',
    cities: seedCities()
      .slice(0, 16)
      .map((city) => JSON.stringify(city)),
    headers: { ...DIRECTUS_AUTH_HEADER, 'content-type': 'application/json' },
  };
}

/** What wrk sends for a workload on Directus (the twin of workloadPlan). */
export function directusRequests(
  workload: WorkloadName,
  records: number,
  options: DirectusRequestOptions = {},
): RequestPlan {
  if (!DIRECTUS_WORKLOADS.includes(workload)) throw new Error(`Directus has no equivalent of the ${workload} workload`);
  const headers = options.readAuth === 'public' ? {} : { ...DIRECTUS_AUTH_HEADER };
  // A read of a seeded id at random (ids run from 1 to records).
  const read = { records: Math.max(1, records), prefix: '/items/users/', suffix: `?fields=${FIELDS}` };
  switch (workload) {
    case 'list':
      return { gets: [DIRECTUS_PATHS.list], headers, createShare: 0 };
    case 'page':
      return { gets: [DIRECTUS_PATHS.page], headers, createShare: 0 };
    case 'healthz':
      return { gets: ['/server/health'], createShare: 0 };
    case 'create':
      return { create: directusCreate(), createShare: 1 };
    case 'read':
      return { read, headers, createShare: 0 };
    default:
      return { read, headers, create: directusCreate(), createShare: 0.1 };
  }
}

// ---------------------------------------------------------------------------------------------
// Systems

export type DirectusSystemId = Extract<PeerId, 'directus-sqlite' | 'directus-postgres'>;

/** A SystemSpec for Directus: its own paths and requests (`listPath`, `requests`), not the contract's. */
export interface DirectusSystemSpec extends SystemSpec {
  id: DirectusSystemId;
  listPath: string;
  requests(workload: WorkloadName, records: number, options?: DirectusRequestOptions): RequestPlan;
}

// Pinned to one core, Directus answers about 35% below its plateau for its first ~20 s of load (JIT
// warm-up of a large code base; NOTES.md, "Problems seen"): every start gets this much untimed load first.
const SERVER_WARMUP_MS = 10_000;
// Start-up is about 2 s, but the first start after a bootstrap, or on a busy machine, takes longer.
const START_TIMEOUT_MS = 120_000;

function launch(install: DirectusInstall, dir: string, port: number, db: Record<string, string>): Launch {
  instanceDir(dir);
  return {
    argv: [process.execPath, cliPath(install.dir), 'start'],
    env: {
      ...directusEnv(dir, db),
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
    },
    cwd: dir,
    readyPath: DIRECTUS_PATHS.ready,
  };
}

/**
 * Directus on SQLite, and on PostgreSQL when a cluster URL is given (in a database of its own,
 * `directus_bench`, next to the service's). Call ensureDirectus() first; prepare() throws otherwise.
 */
export function directusSystem(root = ROOT, postgresUrl?: string, options: DirectusOptions = {}): DirectusSystemSpec[] {
  const journal = options.sqliteJournal ?? 'delete';
  const common = {
    // A JSON body like json-server's, but on Directus's own paths: see `requests`.
    createStyle: 'json' as const,
    // Its listing path answers the contract's bytes (checked at 1k and 10k, and by length at 1M).
    contractListing: true,
    listPath: DIRECTUS_PATHS.list,
    requests: directusRequests,
    startTimeoutMs: START_TIMEOUT_MS,
    serverWarmupMs: SERVER_WARMUP_MS,
  };
  const list: DirectusSystemSpec[] = [
    {
      ...common,
      id: 'directus-sqlite',
      label: `Directus ${DIRECTUS_VERSION} (SQLite${journal === 'wal' ? ', WAL' : ''})`,
      prepare: async (records, dir, port) => {
        const install = requireInstall(root);
        instanceDir(dir);
        sqliteTemplate ??= buildSqliteTemplate(install, dir).catch((error: unknown) => {
          sqliteTemplate = undefined;
          throw error;
        });
        const file = join(dir, 'directus.db');
        seedSqlite(await sqliteTemplate, file, records, journal);
        return launch(install, dir, port, { DB_CLIENT: 'sqlite3', DB_FILENAME: file });
      },
    },
  ];
  if (postgresUrl !== undefined) {
    list.push({
      ...common,
      id: 'directus-postgres',
      label: `Directus ${DIRECTUS_VERSION} (PostgreSQL)`,
      helperPids: postgresPids(postgresUrl),
      prepare: async (records, dir, port) => {
        const install = requireInstall(root);
        instanceDir(dir);
        let template = pgTemplates.get(postgresUrl);
        if (template === undefined) {
          template = buildPgTemplate(install, dir, postgresUrl).catch((error: unknown) => {
            pgTemplates.delete(postgresUrl);
            throw error;
          });
          pgTemplates.set(postgresUrl, template);
        }
        await template;
        const url = await freshDatabase(postgresUrl, PG_BENCH_DB, PG_TEMPLATE_DB);
        await seedPostgres(url, records);
        return launch(install, dir, port, { DB_CLIENT: 'pg', DB_CONNECTION_STRING: url });
      },
    });
  }
  return list;
}
