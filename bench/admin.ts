// The admin page opened on many records:
//   node --import tsx bench/admin.ts [--rows N] [--runs R] [--store sqlite|postgresql|both]
// For each store, with 1,000 records (the baseline) and then N (1,000,000 by default): the service as
// `npm start` runs it, on 127.0.0.1, and a headless Chromium that opens /admin R times (a new tab
// each time, nothing cached). It prints the median and worst milliseconds from the start of the
// navigation to the first page of records drawn, and to the total count shown beside it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS } from '../test/helpers/chromium.ts';
import { freePort, killStarted, startChild } from './child-server.ts';
import { seedPostgres, startPostgres } from './postgres.ts';
import { seedSqlite } from './seed-files.ts';
import { buildService } from './service-build.ts';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '7' },
    store: { type: 'string', default: 'both' },
  },
});
const ROWS = Number(values.rows);
const RUNS = Number(values.runs);
const BASELINE = 1000;
const ROOT = new URL('..', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'user-records-bench-admin-'));
const service = buildService(ROOT, dir);

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

/** Opens /admin RUNS times: milliseconds from navigation start to the first row, and to the count. */
async function openings(url: string): Promise<{ rows: number[]; count: number[] }> {
  const context = await chromium.launchPersistentContext(join(dir, `profile-${Date.now()}`), {
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
  });
  const rows: number[] = [];
  const count: number[] = [];
  try {
    for (let run = 0; run < RUNS; run++) {
      const page = await context.newPage();
      await page.goto(`${url}/admin`, { waitUntil: 'commit' });
      await page.locator('tr[data-id]').first().waitFor({ timeout: 60_000 });
      rows.push((await page.evaluate('performance.now()')) as number);
      await page.getByText(/matching/).waitFor({ timeout: 60_000 });
      count.push((await page.evaluate('performance.now()')) as number);
      await page.close();
    }
  } finally {
    await context.close();
  }
  return { rows, count };
}

async function measure(store: string, seed: (count: number) => Promise<string>): Promise<void> {
  for (const count of [BASELINE, ROWS]) {
    const databaseUrl = await seed(count);
    const port = await freePort();
    const server = await startChild(
      {
        argv: [process.execPath, ...service.args],
        env: { DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', RATE_LIMIT: 'off', LOG_LEVEL: 'warn' },
        cwd: ROOT,
        readyPath: '/healthz',
      },
      port,
    );
    try {
      const { rows, count: counted } = await openings(server.url);
      console.log(
        `${store.padEnd(10)} ${String(count).padStart(9)} records: first page ${median(rows).toFixed(0)} ms ` +
          `(worst ${Math.max(...rows).toFixed(0)}), count shown ${median(counted).toFixed(0)} ms ` +
          `(worst ${Math.max(...counted).toFixed(0)}), median of ${RUNS}`,
      );
    } finally {
      process.kill(server.pid, 'SIGTERM');
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

try {
  if (values.store !== 'postgresql') {
    await measure('sqlite', async (count) => {
      const path = join(dir, `users-${count}.db`);
      await seedSqlite(path, count);
      return path;
    });
  }
  if (values.store !== 'sqlite') {
    const cluster = await startPostgres();
    if (typeof cluster === 'string') console.log(`PostgreSQL skipped: ${cluster}`);
    else {
      try {
        await measure('postgresql', async (count) => {
          await seedPostgres(cluster.url, count);
          return cluster.url;
        });
      } finally {
        await cluster.stop();
      }
    }
  }
} finally {
  killStarted();
  rmSync(dir, { recursive: true, force: true });
}
