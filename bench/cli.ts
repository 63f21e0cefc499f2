// The operator's commands on many records:
//   node --import tsx bench/cli.ts [--rows N] [--store sqlite|postgresql|both] [--api-seconds S]
// For each store: import a CSV of N rows (rows/s, peak memory), export it as CSV and as JSON (rows/s,
// peak memory), back it up and restore it (seconds), each alone and again while a writer makes 100
// writes/s through the service, and, for comparison, the same file sent row by row as `POST /users`
// (one at a time, as a script would, and 16 at a time), for S seconds (20 by default) or the whole
// file. The code is the commit's (HEAD), copied clean. Each command runs as `npx user-records` does
// (bin/user-records.mjs, which runs its bundle),
// its own process, under /usr/bin/time for its peak memory (max RSS); times include the process
// start. The service runs as `user-records serve`, on 127.0.0.1, with RATE_LIMIT=off.
import { execFileSync, spawn } from 'node:child_process';
import {
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { csvRecords } from '../src/cli/csv-records.ts';
import { type ChildServer, freePort, killStarted, startChild } from './child-server.ts';
import { startPostgres } from './postgres.ts';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    store: { type: 'string', default: 'both' },
    'api-seconds': { type: 'string', default: '20' },
  },
});
const ROWS = Number(values.rows);
const API_SECONDS = Number(values['api-seconds']);
const SOURCE = new URL('..', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'user-records-bench-cli-'));
/**
 * The commands run from a clean copy of the commit (git archive), never from the working tree,
 * so the figures are those of the commit the table names.
 */
const COMMIT = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: SOURCE, encoding: 'utf8' }).trim();
const ROOT = join(dir, 'checkout');
mkdirSync(ROOT);
// The whole commit (3 MB): the bundle's build reads more than src/ (the admin page, its client, tsconfig).
execFileSync('sh', ['-c', `git archive ${COMMIT} | tar -x -C '${ROOT}'`], { cwd: SOURCE });
symlinkSync(join(SOURCE, 'node_modules'), join(ROOT, 'node_modules'));
const BIN = join(ROOT, 'bin/user-records.mjs');
const CSV = join(dir, 'people.csv');
/** The writer beside backups and restores: writes a second, and a bound on how many it ever starts. */
const WRITES_PER_SECOND = 100;
const MAX_WRITES = WRITES_PER_SECOND * 900;

/** A CSV of `rows` records, some with quotes, commas and non-ASCII letters. */
async function writeCsv(path: string, rows: number): Promise<void> {
  const out = createWriteStream(path);
  out.write('name,age,city\r\n');
  for (let i = 0; i < rows; i++) {
    const name = i % 10 === 0 ? `"Smith, Ann ""${i}"""` : i % 10 === 1 ? `Zoë ${i}` : `User ${i}`;
    if (!out.write(`${name},${i % 151},City ${i % 977}\r\n`))
      await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((r) => out.end(() => r()));
}

interface Run {
  seconds: number;
  peakMB: number;
}

/** Runs `user-records ARGS` under /usr/bin/time: wall seconds and peak resident memory. */
async function timed(args: string[], env: Record<string, string>): Promise<Run> {
  const report = join(dir, 'time.txt');
  const child = spawn('/usr/bin/time', ['-o', report, '-f', '%e %M', process.execPath, BIN, ...args, '--quiet'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`user-records ${args.join(' ')} exited with ${code}`);
  const [seconds, kb] = readFileSync(report, 'utf8').trim().split('\n').at(-1)?.split(' ').map(Number) ?? [];
  return { seconds: seconds as number, peakMB: ((kb as number) * 1024) / 1e6 };
}

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/** One POST /users of a record through the service: its status (0: no answer) and milliseconds. */
function post(base: string, fields: readonly string[]): Promise<{ status: number; ms: number }> {
  const [name, age, city] = fields as [string, string, string];
  const path = `/users?name=${encodeURIComponent(name)}&age=${encodeURIComponent(age)}&city=${encodeURIComponent(city)}`;
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = request(`${base}${path}`, { method: 'POST', agent, timeout: 60_000 }, (res) => {
      res.resume();
      res.once('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0 }));
    });
    req.once('timeout', () => req.destroy());
    req.once('error', () => resolve({ status: 0, ms: performance.now() - t0 }));
    req.end();
  });
}

/** The service on DATABASE_URL `url`, as `user-records serve` runs it. */
async function serve(url: string): Promise<ChildServer> {
  const port = await freePort();
  return startChild(
    {
      argv: [process.execPath, BIN, 'serve'],
      env: { DATABASE_URL: url, PORT: String(port), HOST: '127.0.0.1', RATE_LIMIT: 'off', LOG_LEVEL: 'warn' },
      cwd: ROOT,
      readyPath: '/healthz',
      logFile: join(dir, 'service.log'),
    },
    port,
  );
}

/**
 * A writer making WRITES_PER_SECOND writes a second on a fixed schedule (a slow answer does not
 * delay the next write), until stopped; what became of them.
 */
function writer(base: string): { stop(): Promise<{ ok: number; failed: number; maxMs: number; p99Ms: number }> } {
  let running = true;
  const answers: Array<{ status: number; ms: number }> = [];
  const t0 = performance.now();
  const loop = (async () => {
    const pending: Array<Promise<void>> = [];
    for (let i = 0; running && i < MAX_WRITES; i++) {
      const due = t0 + (i * 1000) / WRITES_PER_SECOND;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      pending.push(post(base, [`Writer ${i}`, String(i % 151), 'Writes']).then((answer) => void answers.push(answer)));
    }
    await Promise.all(pending);
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      const ms = answers.map((answer) => answer.ms).sort((a, b) => a - b);
      const ok = answers.filter((answer) => answer.status === 200).length;
      return {
        ok,
        failed: answers.length - ok,
        maxMs: ms.at(-1) ?? 0,
        p99Ms: ms[Math.min(ms.length - 1, Math.floor(ms.length * 0.99))] ?? 0,
      };
    },
  };
}

/** Runs `user-records ARGS` while the service on `url` takes WRITES_PER_SECOND writes a second. */
async function underWrites(args: string[], url: string): Promise<{ run: Run; note: string }> {
  const service = await serve(url);
  try {
    const writes = writer(service.url);
    // A second of writes first, so the command starts among them.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const run = await timed(args, { DATABASE_URL: url });
    const seen = await writes.stop();
    const failed = seen.failed === 0 ? 'none failed' : `${seen.failed} failed`;
    return {
      run,
      note: `${seen.ok} writes meanwhile, ${failed}; slowest ${Math.round(seen.maxMs)} ms, p99 ${Math.round(seen.p99Ms)} ms`,
    };
  } finally {
    await service.stop();
  }
}

/** The CSV's records sent one POST /users each, `inFlight` at a time, for API_SECONDS or the whole file. */
async function throughApi(url: string, inFlight: number): Promise<{ rows: number; seconds: number; failed: number }> {
  const service = await serve(url);
  try {
    const records = csvRecords(
      (async function* () {
        for await (const chunk of createReadStream(CSV, { encoding: 'utf8' })) yield chunk as string;
      })(),
    );
    let header = true;
    const queue: string[][] = [];
    let done = false;
    const next = async (): Promise<string[] | undefined> => {
      while (queue.length === 0 && !done) {
        const batch = await records.next();
        if (batch.done === true) done = true;
        else {
          for (const record of batch.value) {
            if (header) header = false;
            else queue.push(record.fields);
          }
        }
      }
      return queue.shift();
    };
    const t0 = performance.now();
    const deadline = t0 + API_SECONDS * 1000;
    let rows = 0;
    let failed = 0;
    const lane = async () => {
      for (let fields = await next(); fields !== undefined && performance.now() < deadline; fields = await next()) {
        const { status } = await post(service.url, fields);
        rows++;
        if (status !== 200) failed++;
      }
    };
    await Promise.all(Array.from({ length: inFlight }, lane));
    await records.return(undefined);
    return { rows, seconds: (performance.now() - t0) / 1000, failed };
  } finally {
    await service.stop();
  }
}

const table: string[] = [];
const mb = (run: Run) => `${run.peakMB.toFixed(0)} MB`;
const rate = (rows: number, seconds: number) => Math.round(rows / seconds).toLocaleString('en');
const line = (store: string, what: string, run: Run, note = '') =>
  table.push(
    `| ${store} | ${what} | ${run.seconds.toFixed(1)} s | ${rate(ROWS, run.seconds)} | ${mb(run)} | ${note} |`,
  );

async function measure(store: string, url: () => Promise<string>): Promise<void> {
  const source = await url();
  const env = { DATABASE_URL: source };
  line(store, `import ${ROWS.toLocaleString('en')}-row CSV`, await timed(['import', CSV], env));
  line(store, 'export CSV', await timed(['export', join(dir, `out-${store}.csv`)], env));
  line(store, 'export JSON', await timed(['export', join(dir, `out-${store}.json`)], env));
  const backup = join(dir, `users-${store}.backup`);
  line(store, 'backup', await timed(['backup', backup], env));
  line(store, 'restore into an empty database', await timed(['restore', backup], { DATABASE_URL: await url() }));
  const busyBackup = join(dir, `users-${store}-busy.backup`);
  const backedUp = await underWrites(['backup', busyBackup], source);
  line(store, `backup, ${WRITES_PER_SECOND} writes/s meanwhile`, backedUp.run, backedUp.note);
  const restored = await underWrites(['restore', backup, '--replace'], await url());
  line(store, `restore --replace, ${WRITES_PER_SECOND} writes/s meanwhile`, restored.run, restored.note);
  for (const inFlight of [1, 16]) {
    const api = await throughApi(await url(), inFlight);
    const whole = api.rows === ROWS ? '' : `, ${api.rows.toLocaleString('en')} rows in ${api.seconds.toFixed(0)} s`;
    const projected = ROWS / (api.rows / api.seconds);
    table.push(
      `| ${store} | the same CSV as POST /users per row, ${inFlight} at a time | ${projected.toFixed(0)} s${whole === '' ? '' : ' (projected)'} | ${rate(api.rows, api.seconds)} | | ${api.failed} failed${whole} |`,
    );
  }
}

try {
  // The command's bundle is built once here (bin/user-records.mjs builds it on first use), not in a timed run.
  execFileSync(process.execPath, [BIN, '--version'], { stdio: 'ignore' });
  // Without its bundle the bin runs src/ through tsx, slower and larger: not the figures of the command.
  if (!existsSync(join(ROOT, 'dist/cli/user-records.mjs'))) throw new Error('the command line bundle did not build');
  await writeCsv(CSV, ROWS);
  process.stderr.write(`${ROWS} rows, ${(statSync(CSV).size / 1e6).toFixed(0)} MB of CSV; commit ${COMMIT}\n`);
  if (values.store !== 'postgresql') {
    let n = 0;
    await measure('sqlite', async () => join(dir, `sqlite-${++n}.db`));
  }
  if (values.store !== 'sqlite') {
    const cluster = await startPostgres();
    if (typeof cluster === 'string') process.stderr.write(`PostgreSQL skipped: ${cluster}\n`);
    else {
      try {
        let n = 0;
        await measure('postgresql', async () => {
          const schema = `bench_cli_${++n}`;
          execFileSync(process.execPath, [
            '-e',
            `const pg=require('pg');const c=new pg.Client(${JSON.stringify(cluster.url)});c.connect().then(()=>c.query('CREATE SCHEMA ${schema}')).then(()=>c.end())`,
          ]);
          const u = new URL(cluster.url);
          u.searchParams.set('options', `-c search_path=${schema}`);
          return u.toString();
        });
      } finally {
        await cluster.stop();
      }
    }
  }
  process.stdout.write(
    [
      `Commit ${COMMIT}, ${new Date().toISOString().slice(0, 10)}:`,
      '',
      '| store | command | time | rows/s | peak memory | meanwhile |',
      '|---|---|---|---|---|---|',
      ...table,
    ].join('\n') + '\n',
  );
} finally {
  killStarted();
  agent.destroy();
  rmSync(dir, { recursive: true, force: true });
}
