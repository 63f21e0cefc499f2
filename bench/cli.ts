// The operator's commands on many records: `node --import tsx bench/cli.ts [--rows N] [--store sqlite|postgresql]`.
// For each store: import a CSV of N rows (rows/s, peak memory), export it as CSV and as JSON (rows/s,
// peak memory), back it up and restore it into an empty database (seconds). Each command runs as
// `user-records` does, its own process, under /usr/bin/time for its peak memory (max RSS); times
// include the process start (about half a second with tsx).
import { execFileSync } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startPostgres } from './postgres.ts';

const { values } = parseArgs({
  options: { rows: { type: 'string', default: '1000000' }, store: { type: 'string', default: 'both' } },
});
const ROWS = Number(values.rows);
const BIN = new URL('../bin/user-records.mjs', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'user-records-bench-cli-'));

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
function timed(args: string[], env: Record<string, string>): Run {
  const report = join(dir, 'time.txt');
  execFileSync('/usr/bin/time', ['-o', report, '-f', '%e %M', process.execPath, BIN, ...args, '--quiet'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const [seconds, kb] = execFileSync('cat', [report], { encoding: 'utf8' }).trim().split(' ').map(Number);
  return { seconds: seconds as number, peakMB: ((kb as number) * 1024) / 1e6 };
}

const rows: string[] = [];
const line = (store: string, what: string, run: Run, count = ROWS) =>
  rows.push(
    `| ${store} | ${what} | ${run.seconds.toFixed(1)} s | ${Math.round(count / run.seconds).toLocaleString('en')} | ${run.peakMB.toFixed(0)} MB |`,
  );

async function measure(store: string, url: () => Promise<string>): Promise<void> {
  const csv = join(dir, 'people.csv');
  const source = await url();
  line(store, `import ${ROWS.toLocaleString('en')}-row CSV`, timed(['import', csv], { DATABASE_URL: source }));
  line(store, 'export CSV', timed(['export', join(dir, `out-${store}.csv`)], { DATABASE_URL: source }));
  line(store, 'export JSON', timed(['export', join(dir, `out-${store}.json`)], { DATABASE_URL: source }));
  const backup = join(dir, `users-${store}.backup`);
  line(store, 'backup', timed(['backup', backup], { DATABASE_URL: source }));
  line(store, 'restore into an empty database', timed(['restore', backup], { DATABASE_URL: await url() }));
}

try {
  await writeCsv(join(dir, 'people.csv'), ROWS);
  process.stderr.write(`${ROWS} rows, ${(statSync(join(dir, 'people.csv')).size / 1e6).toFixed(0)} MB of CSV\n`);
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
    ['| store | command | time | rows/s | peak memory |', '|---|---|---|---|---|', ...rows].join('\n') + '\n',
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
