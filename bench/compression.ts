// What compression costs and saves, as part of `npm run bench` (the service on SQLite at 1k and at
// the largest quick size) or alone:
//   node --import tsx bench/compression.ts [--records 1000,100000]
//     the service as `npm start` runs it, on 127.0.0.1, over N seeded records: for GET /users and
//     GET /users/1, the bytes over the wire and the server's CPU per request, identity, gzip and br.
//   node --import tsx bench/compression.ts --levels [--records 100000]
//     in this process, no server: the listing of N records compressed in 45 kB writes (as the
//     service streams it) at each gzip level and brotli quality: CPU ms per MB and the ratio, the
//     figures behind the levels in src/http/compression.ts.
import { mkdtempSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { constants, createBrotliCompress, createGzip } from 'node:zlib';
import { freePort, killStarted, startChild } from './child-server.ts';
import { cpuMsPerRequest } from './proc-stats.ts';
import { listingBody } from './seed-data.ts';
import { seedSqlite } from './seed-files.ts';
import { buildService } from './service-build.ts';

export const CODINGS = ['identity', 'gzip', 'br'] as const;

/** One path in one coding: what one answer weighs on the wire and costs the server. */
export interface CompressionRow {
  path: string;
  coding: (typeof CODINGS)[number];
  /** Bytes of the body as sent (still encoded). */
  bytes: number;
  /** The server's CPU per request (user + system), from /proc over `requests` requests. */
  cpuMs: number;
  requests: number;
  /** The Content-Encoding the answer came with ('' for none). */
  sent: string;
}

/** One GET, its body's bytes as they came (Node does not decode), abandoned after 60 s. */
function fetchRaw(url: string, coding: string): Promise<{ bytes: number; sent: string }> {
  return new Promise((resolve, reject) => {
    const request = get(url, { agent: false, timeout: 60_000, headers: { 'accept-encoding': coding } }, (answer) => {
      let bytes = 0;
      answer.on('data', (chunk: Buffer) => (bytes += chunk.length));
      answer.once('end', () => resolve({ bytes, sent: String(answer.headers['content-encoding'] ?? '') }));
      answer.once('error', reject);
    });
    request.once('timeout', () => request.destroy(new Error(`no answer from ${url} within 60 s`)));
    request.once('error', reject);
  });
}

// Enough requests that /proc's 10 ms ticks are a small part of the total, bounded for large listings.
const requestsFor = (records: number, path: string) =>
  path !== '/users' ? 300 : Math.max(5, Math.min(200, Math.round(2_000_000 / records)));

/** For GET /users and GET /users/1 on a running service of `records` records: each coding in turn. */
export async function measureCompression(url: string, pid: number, records: number): Promise<CompressionRow[]> {
  const rows: CompressionRow[] = [];
  for (const path of ['/users', '/users/1']) {
    const requests = requestsFor(records, path);
    for (const coding of CODINGS) {
      await fetchRaw(url + path, coding); // warm: the listing is kept after its first read
      const { cpuMs, last } = await cpuMsPerRequest(pid, requests, () => fetchRaw(url + path, coding));
      const answer = last ?? { bytes: 0, sent: '' };
      rows.push({ path, coding, bytes: answer.bytes, cpuMs, requests, sent: answer.sent });
    }
  }
  return rows;
}

/** A row as the bench prints it. */
export function compressionLine(row: CompressionRow): string {
  const size = row.bytes >= 1e5 ? `${(row.bytes / 1e6).toFixed(2)} MB` : `${row.bytes.toLocaleString('en-US')} B`;
  return `GET ${row.path} ${row.coding.padEnd(8)} ${size.padStart(10)} sent ${(row.sent || 'identity').padEnd(8)} ${row.cpuMs.toFixed(2).padStart(7)} ms CPU/request (${row.requests} requests)`;
}

/** The body in 45 kB writes (a page of records) through one compressor: CPU ms and bytes out. */
async function compressOnce(make: () => NodeJS.ReadWriteStream, body: Buffer): Promise<{ ms: number; bytes: number }> {
  const started = process.cpuUsage();
  let bytes = 0;
  const zip = make();
  zip.on('data', (chunk: Buffer) => (bytes += chunk.length));
  const ended = new Promise((resolve) => zip.once('end', resolve));
  for (let at = 0; at < body.length; at += 45_000) {
    if (!zip.write(body.subarray(at, at + 45_000))) await new Promise((resolve) => zip.once('drain', resolve));
  }
  zip.end();
  await ended;
  const used = process.cpuUsage(started);
  return { ms: (used.user + used.system) / 1000, bytes };
}

async function levels(records: number): Promise<void> {
  const body = listingBody(records);
  const mb = body.length / 1e6;
  console.log(`GET /users of ${records.toLocaleString('en-US')} seeded records: ${mb.toFixed(2)} MB; best of 3`);
  const brotli = (quality: number) => () =>
    createBrotliCompress({
      params: {
        [constants.BROTLI_PARAM_QUALITY]: quality,
        [constants.BROTLI_PARAM_LGWIN]: 18,
        [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      },
    });
  const candidates: Array<[string, () => NodeJS.ReadWriteStream]> = [
    ...[1, 3, 4, 5, 6, 9].map((level): [string, () => NodeJS.ReadWriteStream] => [
      `gzip level ${level}`,
      () => createGzip({ level }),
    ]),
    ...[1, 2, 3, 4, 5, 6, 7, 9].map((quality): [string, () => NodeJS.ReadWriteStream] => [
      `br quality ${quality}`,
      brotli(quality),
    ]),
  ];
  for (const [name, make] of candidates) {
    let best = { ms: Number.POSITIVE_INFINITY, bytes: 0 };
    for (let run = 0; run < 3; run++) {
      const once = await compressOnce(make, body);
      if (once.ms < best.ms) best = once;
    }
    console.log(
      `${name.padEnd(14)} ${(best.ms / mb).toFixed(1).padStart(6)} ms CPU per MB   ratio ${(body.length / best.bytes).toFixed(1).padStart(5)}   ${(best.bytes / 1e6).toFixed(2)} MB`,
    );
  }
  // Brotli's own default, once: the reason not to use it for live answers.
  const slowest = await compressOnce(brotli(11), body.subarray(0, Math.min(body.length, 1_000_000)));
  console.log(
    `br quality 11  ${(slowest.ms / Math.min(mb, 1)).toFixed(1).padStart(6)} ms CPU per MB (on the first MB)`,
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { records: { type: 'string' }, levels: { type: 'boolean', default: false } },
  });
  if (values.levels) return levels(Number(values.records ?? 100_000));
  const counts = (values.records ?? '1000,100000').split(',').map(Number);
  const root = new URL('..', import.meta.url).pathname;
  const dir = mkdtempSync(join(tmpdir(), 'user-records-bench-compression-'));
  try {
    const service = buildService(root, dir);
    for (const records of counts) {
      const file = join(dir, `users-${records}.db`);
      await seedSqlite(file, records);
      const port = await freePort();
      // As the main run starts it (systems.ts): one worker, no rate limit, the access log to a file.
      const launch = {
        argv: [process.execPath, ...service.args],
        env: { DATABASE_URL: file, WORKERS: '1', RATE_LIMIT: 'off', HOST: '127.0.0.1', PORT: String(port) },
        cwd: root,
        readyPath: '/healthz',
        logFile: join(dir, `service-${records}.log`),
      };
      const server = await startChild(launch, port);
      try {
        console.log(`${records.toLocaleString('en-US')} records`);
        for (const row of await measureCompression(server.url, server.pid, records)) {
          console.log(`  ${compressionLine(row)}`);
        }
      } finally {
        await server.stop();
      }
    }
  } finally {
    killStarted();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
