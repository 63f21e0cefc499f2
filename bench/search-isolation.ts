// Short searches beside a reader of single records, on SQLite (the third outside run's finding):
//   node --import tsx bench/search-isolation.ts [--records N] [--db PATH] [--seconds S] [--searchers C]
//     [--env NAME=VALUE ...]
// The service as `npm start` runs it, on 127.0.0.1, over N records (1,000,000 by default; seeded into
// PATH when given and not there yet, so later runs reuse it). First the reader alone for S seconds,
// then C clients each sending searches of one or two letters that no record contains (every record is
// read: the worst short search) back to back, with `limit=10`, beside the same reader for S seconds.
// It prints, for each phase, the reader's answers by status, its failed requests and its latencies,
// and the searches' answers by status and latencies.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Latencies } from '../test/helpers/latency.ts';
import { freePort, killStarted, startChild } from './child-server.ts';
import { seedSqlite } from './seed-files.ts';
import { buildService } from './service-build.ts';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    db: { type: 'string' },
    seconds: { type: 'string', default: '10' },
    searchers: { type: 'string', default: '4' },
    env: { type: 'string', multiple: true, default: [] },
  },
});
const RECORDS = Number(values.records);
const SECONDS = Number(values.seconds);
const SEARCHERS = Number(values.searchers);
const ROOT = new URL('..', import.meta.url).pathname;
// Letters in no seeded record (names `user<i>`, eight European cities): a search for them reads every record.
const ABSENT = 'cfghjkqtwxz';

interface Tally {
  latencies: Latencies;
  statuses: Map<number | string, number>;
}

const tally = (): Tally => ({ latencies: new Latencies(), statuses: new Map() });

/** Sends `path()` back to back until `until`, one request at a time; bounded by count too. */
async function client(url: string, path: () => string, until: number, into: Tally): Promise<void> {
  for (let i = 0; i < 1_000_000 && performance.now() < until; i++) {
    const started = performance.now();
    let status: number | string;
    try {
      const answer = await fetch(url + path(), { signal: AbortSignal.timeout(30_000) });
      await answer.arrayBuffer();
      status = answer.status;
    } catch (error) {
      status = (error as Error).name;
    }
    into.latencies.record(performance.now() - started);
    into.statuses.set(status, (into.statuses.get(status) ?? 0) + 1);
  }
}

const letter = () => ABSENT[Math.floor(Math.random() * ABSENT.length)] as string;
const shortSearch = () => `/users?q=${letter()}${Math.random() < 0.5 ? letter() : ''}&limit=10`;
const oneRecord = () => `/users/${1 + Math.floor(Math.random() * RECORDS)}`;

function line(name: string, seen: Tally): string {
  const statuses = Object.fromEntries([...seen.statuses].sort());
  const failed = [...seen.statuses].filter(([status]) => status !== 200).reduce((sum, [, n]) => sum + n, 0);
  return `${name.padEnd(30)} ${String(seen.latencies.count).padStart(6)} answers, ${String(failed).padStart(5)} not 200, ${seen.latencies.summary()}  ${JSON.stringify(statuses)}`;
}

const dir = mkdtempSync(join(tmpdir(), 'user-records-bench-search-'));
try {
  const service = buildService(ROOT, dir);
  const path = values.db ?? join(dir, 'users.db');
  if (!existsSync(path)) {
    console.log(`seeding ${RECORDS} records into ${path}...`);
    await seedSqlite(path, RECORDS);
  }
  const env = Object.fromEntries(values.env.map((pair) => pair.split(/=(.*)/s).slice(0, 2) as [string, string]));
  const port = await freePort();
  const server = await startChild(
    {
      argv: [process.execPath, ...service.args],
      env: { DATABASE_URL: path, PORT: String(port), HOST: '127.0.0.1', RATE_LIMIT: 'off', LOG_LEVEL: 'warn', ...env },
      cwd: ROOT,
      readyPath: '/healthz',
    },
    port,
  );
  try {
    console.log(`${RECORDS} records, ${SEARCHERS} searchers, ${SECONDS} s per phase, settings ${JSON.stringify(env)}`);
    // Warm-up: the connection pool, the JIT and the page cache.
    await client(server.url, oneRecord, performance.now() + 1000, tally());
    const alone = tally();
    await client(server.url, oneRecord, performance.now() + SECONDS * 1000, alone);
    console.log(line('reader alone', alone));
    const reader = tally();
    const searches = tally();
    const until = performance.now() + SECONDS * 1000;
    await Promise.all([
      client(server.url, oneRecord, until, reader),
      ...Array.from({ length: SEARCHERS }, () => client(server.url, shortSearch, until, searches)),
    ]);
    console.log(line('reader beside short searches', reader));
    console.log(line('short searches', searches));
  } finally {
    await server.stop();
  }
} finally {
  killStarted();
  rmSync(dir, { recursive: true, force: true });
}
