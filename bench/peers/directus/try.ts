// Proves the Directus peer end to end, outside the bench:
//   node --import tsx bench/peers/directus/try.ts [--skip-pg] [--skip-1m] [--duration-ms 4000]
//       [--server-warmup-ms 20000] [--journal wal]
//   node --import tsx bench/peers/directus/try.ts --auth-check   (read one with and without the token, alternately)
// Installs Directus if needed, then for SQLite (and PostgreSQL, in a throwaway cluster) at 1k and 10k
// records: prepare(), start under `taskset -c 1`, check the listing bytes, warm it with 20 s of
// untimed reads, and load each workload with wrk (pinned to CPU 0, as this process is),
// 10 connections, 1 s warm-up (5 s for create) + 4 s measured.
// Then SQLite at 1M records: seeding time, start-up, RSS at rest, read one, and one full listing.
// Figures are printed and written to bench/peers/directus/data/last-try.json (git-ignored).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import pg from 'pg';
import { findPostgresBin, type PostgresCluster, startPostgresCluster } from '../../../test/helpers/pg-cluster.ts';
import { type ChildServer, freePort, killStarted, startChild } from '../../child-server.ts';
import { pinCpus } from '../../cpu-pinning.ts';
import { type LoadResult, runLoad } from '../../load.ts';
import { resetPeak, statusMB, waitIdle } from '../../proc-stats.ts';
import { listingBody } from '../../seed-data.ts';
import { wrkOrExit } from '../../wrk.ts';
import {
  type DirectusRequestOptions,
  type DirectusSystemSpec,
  type DirectusWorkload,
  directusSystem,
  ensureDirectus,
} from '../directus.ts';

const ROOT = new URL('../../..', import.meta.url).pathname;
const log = (line: string) => process.stdout.write(`${line}\n`);
const { values: flags } = parseArgs({
  options: {
    'skip-pg': { type: 'boolean', default: false },
    'skip-1m': { type: 'boolean', default: false },
    // Only SQLite at 10k: read one, token and public alternately, three times each (warm-up effects show).
    'auth-check': { type: 'boolean', default: false },
    'duration-ms': { type: 'string', default: '4000' },
    // Untimed read load after each start: Directus runs ~35% below its plateau for its first ~20 s
    // of load when pinned to one core (JIT warm-up); 0 measures it cold, as the bench does today.
    'server-warmup-ms': { type: 'string', default: '20000' },
    journal: { type: 'string', default: 'delete' },
  },
});
const timing = {
  connections: 10,
  warmupMs: 1_000,
  durationMs: Number(flags['duration-ms']),
  minResponses: 20,
  maxDurationMs: 10_000,
};
const serverWarmupMs = Number(flags['server-warmup-ms']);
const wrk = wrkOrExit('try', log);
// Creates get a longer warm-up of their own: their code path (activity, revisions) is not warmed by reads.
const CREATE_WARMUP_MS = 5_000;
// Everything is bounded: a run that is still going after this gives up.
const DEADLINE_MS = 25 * 60_000;

interface Run {
  system: string;
  records: number;
  workload: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  serverCpu: number | undefined;
  databaseCpu: number | undefined;
  meanResponseBytes: number;
}
interface Stage {
  system: string;
  records: number;
  prepareMs: number;
  startupMs?: number;
  rssAtRestMB?: number;
  listingMatches?: boolean;
  perCreate?: { activity: number; revisions: number };
  fullListing?: { status: number; ttfbMs: number; totalMs: number; bytes: number; peakRssMB?: number };
  problems: string[];
}
const runs: Run[] = [];
const stages: Stage[] = [];

const work = mkdtempSync(join(tmpdir(), 'directus-try-'));
let cluster: PostgresCluster | undefined;
const cleanUp = () => {
  killStarted();
  rmSync(work, { recursive: true, force: true });
};
process.once('exit', cleanUp);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping what this script started`);
    killStarted();
    void (cluster?.stop() ?? Promise.resolve()).finally(() => process.exit(130));
  });
}
const watchdog = setTimeout(() => {
  log(`still running after ${DEADLINE_MS / 60_000} min: giving up`);
  killStarted();
  void (cluster?.stop() ?? Promise.resolve()).finally(() => process.exit(1));
}, DEADLINE_MS);
watchdog.unref();

const fmt = (n: number | undefined, digits = 0) =>
  n === undefined || Number.isNaN(n) ? '–' : n.toLocaleString('en-US', { maximumFractionDigits: digits });

/** One GET read whole (no headers: the public policy may read), abandoned after `timeoutMs`. */
function fetchAll(url: string, pid?: number, timeoutMs = 60_000) {
  return new Promise<{ status: number; body: Buffer; ttfbMs: number; totalMs: number; peakRssMB?: number }>(
    (resolve, reject) => {
      const reset = pid !== undefined && resetPeak(pid);
      let sampled = 0;
      const sampler =
        pid === undefined
          ? undefined
          : setInterval(() => (sampled = Math.max(sampled, statusMB(pid, 'VmRSS') ?? 0)), 20);
      const t0 = performance.now();
      const request = get(url, { agent: false, timeout: timeoutMs }, (response) => {
        const ttfbMs = performance.now() - t0;
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.once('end', () => {
          clearInterval(sampler);
          const peakRssMB = pid === undefined ? undefined : reset ? statusMB(pid, 'VmHWM') : sampled;
          resolve({
            status: response.statusCode ?? 0,
            body: Buffer.concat(chunks),
            ttfbMs,
            totalMs: performance.now() - t0,
            peakRssMB,
          });
        });
        response.once('error', reject);
      });
      request.once('timeout', () => request.destroy(new Error(`no answer from ${url} within ${timeoutMs} ms`)));
      request.once('error', (error) => {
        clearInterval(sampler);
        reject(error);
      });
    },
  );
}

/** Activity and revision rows so far, read from Directus's own database. */
async function accountabilityRows(spec: DirectusSystemSpec, dir: string): Promise<[number, number]> {
  const sql = 'SELECT (SELECT count(*) FROM directus_activity) AS a, (SELECT count(*) FROM directus_revisions) AS r';
  if (spec.id === 'directus-sqlite') {
    const db = new Database(join(dir, 'directus.db'), { readonly: true });
    try {
      const row = db.prepare(sql).get() as { a: number; r: number };
      return [row.a, row.r];
    } finally {
      db.close();
    }
  }
  const url = new URL(cluster?.url ?? '');
  url.pathname = '/directus_bench';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const row = (await client.query<{ a: string; r: string }>(sql)).rows[0];
    return [Number(row?.a), Number(row?.r)];
  } finally {
    await client.end();
  }
}

interface Step {
  workload: DirectusWorkload;
  options?: DirectusRequestOptions;
}

async function load(spec: DirectusSystemSpec, server: ChildServer, records: number, step: Step): Promise<LoadResult> {
  await waitIdle(server.pid);
  if (step.workload === 'list') await fetchAll(server.url + spec.listPath);
  const result = await runLoad({
    url: server.url,
    plan: spec.requests(step.workload, records, step.options),
    wrk,
    dir: work,
    ...timing,
    warmupMs: step.workload === 'create' ? CREATE_WARMUP_MS : timing.warmupMs,
    pid: server.pid,
    helperPids: spec.helperPids,
  });
  const name = step.workload + (step.options?.readAuth === 'public' ? '(public)' : '');
  runs.push({ system: spec.id, records, workload: name, ...result });
  log(
    `  ${name.padEnd(11)} ${fmt(result.requestsPerSecond).padStart(6)} req/s  p50 ${fmt(result.p50Ms, 2)} ms  ` +
      `p99 ${fmt(result.p99Ms, 2)} ms  non-2xx ${result.non2xx}  errors ${result.errors}  ` +
      `server CPU ${fmt(result.serverCpu, 2)}${result.databaseCpu === undefined ? '' : `  PostgreSQL CPU ${fmt(result.databaseCpu, 2)}`}  ` +
      `${fmt(result.meanResponseBytes)} B/answer` +
      (result.non2xx > 0 ? `  codes ${JSON.stringify(result.statusCodes)}` : ''),
  );
  return result;
}

async function stage(spec: DirectusSystemSpec, records: number, steps: Step[], fullListing = false): Promise<void> {
  const dir = join(work, `${spec.id}-${records}`);
  mkdirSync(dir, { recursive: true });
  const record: Stage = { system: spec.id, records, prepareMs: 0, problems: [] };
  stages.push(record);
  log(`[${fmt(records)}] ${spec.label}`);
  const port = await freePort();
  const t0 = performance.now();
  const launch = await spec.prepare(records, dir, port);
  record.prepareMs = performance.now() - t0;
  const server = await startChild(launch, port, pinning.serverPrefix, 120_000);
  try {
    record.startupMs = server.startupMs;
    await waitIdle(server.pid, 3_000);
    record.rssAtRestMB = statusMB(server.pid, 'VmRSS');
    log(
      `  prepared in ${fmt(record.prepareMs)} ms, started in ${fmt(server.startupMs)} ms, ` +
        `RSS at rest ${fmt(record.rssAtRestMB)} MB`,
    );
    if (records <= 10_000) {
      const { body } = await fetchAll(server.url + spec.listPath);
      record.listingMatches = body.equals(listingBody(records));
      log(`  GET ${spec.listPath}: ${body.length} bytes, byte-identical to our GET /users: ${record.listingMatches}`);
      if (!record.listingMatches) record.problems.push(`listing differs: ${body.subarray(0, 200).toString()}`);
    }
    if (serverWarmupMs > 0) {
      const warm = await runLoad({
        url: server.url,
        plan: spec.requests('read', records),
        wrk,
        dir: work,
        ...timing,
        warmupMs: 0,
        durationMs: serverWarmupMs,
        maxDurationMs: serverWarmupMs,
        pid: server.pid,
      });
      log(`  warm-up: ${fmt(warm.requestsPerSecond)} req/s of read one over ${fmt(serverWarmupMs)} ms (not counted)`);
    }
    for (const step of steps) {
      const before = step.workload === 'create' ? await accountabilityRows(spec, dir) : undefined;
      const result = await load(spec, server, records, step);
      if (before !== undefined) {
        await waitIdle(server.pid);
        const after = await accountabilityRows(spec, dir);
        const creates = result.statusCodes['200'] ?? 0;
        record.perCreate = { activity: (after[0] - before[0]) / creates, revisions: (after[1] - before[1]) / creates };
        log(
          `  per create: ${fmt(record.perCreate.activity, 2)} directus_activity and ` +
            `${fmt(record.perCreate.revisions, 2)} directus_revisions rows (${creates} creates answered 200)`,
        );
      }
      if (result.non2xx > 0 || result.errors > 0) record.problems.push(`${step.workload}: non-2xx or errors`);
    }
    if (fullListing) {
      const listing = await fetchAll(server.url + spec.listPath, server.pid, 300_000);
      record.fullListing = {
        status: listing.status,
        ttfbMs: listing.ttfbMs,
        totalMs: listing.totalMs,
        bytes: listing.body.length,
        peakRssMB: listing.peakRssMB,
      };
      log(
        `  full listing (limit=-1): ${listing.status}, TTFB ${fmt(listing.ttfbMs)} ms, total ${fmt(listing.totalMs)} ms, ` +
          `${fmt(listing.body.length / 1e6, 1)} MB, peak RSS ${fmt(listing.peakRssMB)} MB`,
      );
    }
  } catch (error) {
    record.problems.push((error as Error).message);
    log(`  PROBLEM: ${(error as Error).message}`);
  } finally {
    const lines = server.logs().filter((line) => !/Spatialite|Geometry type/.test(line));
    if (lines.length > 0) log(`  Directus printed:\n    ${lines.slice(-10).join('\n    ')}`);
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const install = await ensureDirectus(log, ROOT);
if (typeof install === 'string') {
  log(`Directus cannot be used here: ${install}`);
  process.exit(1);
}
log(`Directus ${install.version} ready in ${install.dir}`);
if (flags['skip-pg'] !== true && findPostgresBin() !== undefined) {
  // Started before this process is pinned, so PostgreSQL is not confined to CPU 0 (as in the bench).
  cluster = await startPostgresCluster();
  log(`PostgreSQL ${cluster.version} cluster at ${cluster.url}`);
}
const pinning = pinCpus(true);
log(pinning.note);

try {
  const journal = flags.journal === 'wal' ? 'wal' : 'delete';
  const specs = directusSystem(ROOT, cluster?.url, { sqliteJournal: journal });
  const small: Step[] = [
    { workload: 'read' },
    { workload: 'page' },
    { workload: 'list' },
    { workload: 'mix' },
    { workload: 'create' },
  ];
  const tenK: Step[] = [
    { workload: 'read' },
    { workload: 'read', options: { readAuth: 'public' } },
    { workload: 'page' },
    { workload: 'list' },
    { workload: 'create' },
  ];
  if (flags['auth-check'] === true) {
    const token: Step = { workload: 'read' };
    const open: Step = { workload: 'read', options: { readAuth: 'public' } };
    const sqliteSpec = specs.find((spec) => spec.id === 'directus-sqlite');
    if (sqliteSpec !== undefined)
      await stage(sqliteSpec, 10_000, [open, token, open, token, open, token, open, token, open, token]);
  }
  for (const spec of flags['auth-check'] === true ? [] : specs) {
    await stage(spec, 1_000, small);
    await stage(spec, 10_000, tenK);
  }
  const sqlite = specs.find((spec) => spec.id === 'directus-sqlite');
  if (flags['skip-1m'] !== true && flags['auth-check'] !== true && sqlite !== undefined) {
    await stage(sqlite, 1_000_000, [{ workload: 'read' }, { workload: 'page' }], true);
  }
} finally {
  await cluster?.stop();
  cleanUp();
}

const out = join(ROOT, 'bench/peers/directus/data');
mkdirSync(out, { recursive: true });
const meta = {
  date: new Date().toISOString(),
  node: process.version,
  pinning: pinning.note,
  timing,
  serverWarmupMs,
  createWarmupMs: CREATE_WARMUP_MS,
};
writeFileSync(join(out, 'last-try.json'), `${JSON.stringify({ meta, stages, runs }, null, 2)}\n`);
log(`\nwritten: bench/peers/directus/data/last-try.json`);
const problems = stages.flatMap((s) => s.problems.map((p) => `${s.system} ${s.records}: ${p}`));
log(problems.length === 0 ? 'no problems' : `problems:\n  ${problems.join('\n  ')}`);
