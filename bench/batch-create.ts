// Creates through the API, one request per record against batches (a JSON array in one POST /users)
// of 1, 100 and 1,000 records, on both stores: records stored per second and the server's CPU per
// record (its whole process tree, and PostgreSQL's processes), all in one run so the ratios compare
// like with like. `npm run bench:batch [-- --seconds 10 --clients 10]`; writes results/batch.md.
import { execFileSync } from 'node:child_process';
import { Agent, request } from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, killStarted, startChild } from './child-server.ts';
import { postgresPids, startPostgres } from './postgres.ts';
import { cpuSeconds, treeCpuSeconds } from './proc-stats.ts';
import { buildService } from './service-build.ts';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '8' }, clients: { type: 'string', default: '10' } },
});
/** How long each row sends for, at most; and at most ROW_RECORDS records. */
const SECONDS = Number(values.seconds);
const CLIENTS = Number(values.clients);
const ROW_RECORDS = 200_000;
const ROOT = new URL('..', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'user-records-bench-batch-'));
process.once('exit', () => {
  killStarted();
  rmSync(work, { recursive: true, force: true });
});

/** The commit measured, marked when the tree had uncommitted changes. */
function commit(): string {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
  return `${git('rev-parse', '--short=12', 'HEAD')}${git('status', '--porcelain') === '' ? '' : ' with uncommitted changes'}`;
}

const keepAlive = new Agent({ keepAlive: true, maxSockets: CLIENTS });

/** One POST; resolves when a 200 has been read whole. */
function post(url: string, path: string, body?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const headers = body === undefined ? {} : { 'content-type': 'application/json' };
    const req = request(`${url}${path}`, { method: 'POST', agent: keepAlive, headers }, (res) => {
      res.resume();
      res.once('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`POST ${res.statusCode}`))));
    });
    req.once('error', reject);
    req.end(body);
  });
}

interface Row {
  store: string;
  /** 0: one request per record, the record in the query string. */
  batch: number;
  records: number;
  seconds: number;
  cpuSeconds: number;
}

/** Sends records for SECONDS (at most ROW_RECORDS) from CLIENTS clients, `batch` per request. */
async function measure(url: string, store: string, batch: number, cpu: () => number): Promise<Row> {
  let next = 0;
  const tag = `${batch}-${Date.now()}`;
  const record = (n: number) => ({ name: `B${n}-${tag}`, age: n % 100, city: 'Oslo' });
  const deadline = performance.now() + SECONDS * 1000;
  const cpu0 = cpu();
  const t0 = performance.now();
  const client = async () => {
    while (performance.now() < deadline && next < ROW_RECORDS) {
      const first = next;
      next += Math.max(batch, 1);
      if (batch === 0) {
        const { name, age, city } = record(first);
        await post(url, `/users?name=${name}&age=${age}&city=${city}`);
      } else {
        await post(url, '/users?fields=id', JSON.stringify(Array.from({ length: batch }, (_, i) => record(first + i))));
      }
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, client));
  const seconds = (performance.now() - t0) / 1000;
  return { store, batch, records: Math.min(next, ROW_RECORDS), seconds, cpuSeconds: cpu() - cpu0 };
}

const service = buildService(ROOT, work);
const rows: Row[] = [];
const cluster = await startPostgres();
const stores: Array<[string, string | undefined]> = [
  ['SQLite', join(work, 'users.db')],
  ['PostgreSQL', typeof cluster === 'string' ? undefined : cluster.url],
];
try {
  for (const [store, databaseUrl] of stores) {
    if (databaseUrl === undefined) {
      console.log(`${store}: skipped (${String(cluster)})`);
      continue;
    }
    const port = await freePort();
    const server = await startChild(
      {
        argv: [process.execPath, ...service.args],
        env: {
          HOST: '127.0.0.1',
          PORT: String(port),
          DATABASE_URL: databaseUrl,
          LOG_LEVEL: 'warn',
          RATE_LIMIT: 'off',
          OVERLOAD_LAG_MS: '0',
        },
        cwd: ROOT,
        readyPath: '/readyz',
        logFile: join(work, `${store}.log`),
      },
      port,
    );
    const database = store === 'PostgreSQL' ? postgresPids(databaseUrl) : () => [];
    const cpu = () =>
      (treeCpuSeconds(server.pid) ?? 0) + database().reduce((sum, pid) => sum + (cpuSeconds(pid) ?? 0), 0);
    try {
      for (const batch of [0, 1, 100, 1000]) rows.push(await measure(server.url, store, batch, cpu));
    } finally {
      await server.stop();
    }
  }
} finally {
  if (typeof cluster !== 'string') await cluster.stop();
}

const lines = [
  `Creates through the API, ${CLIENTS} clients, up to ${SECONDS} s per row, commit \`${commit()}\`, ${new Date().toISOString().slice(0, 10)}:`,
  '',
  '| Store | Records per request | Records/s | × one per request | Server CPU per record |',
  '|---|---|---|---|---|',
];
for (const row of rows) {
  const rate = row.records / row.seconds;
  const single = rows.find((other) => other.store === row.store && other.batch === 0);
  const ratio = single === undefined ? '' : `${(rate / (single.records / single.seconds)).toFixed(1)}×`;
  const what = row.batch === 0 ? '1 (query string)' : `${row.batch} (JSON array)`;
  const cpu = `${Math.round((row.cpuSeconds / row.records) * 1e6)} µs`;
  lines.push(`| ${row.store} | ${what} | ${Math.round(rate).toLocaleString('en')} | ${ratio} | ${cpu} |`);
}
const text = `${lines.join('\n')}\n`;
console.log(text);
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
writeFileSync(join(ROOT, 'bench/results/batch.md'), text);
process.exit(0);
