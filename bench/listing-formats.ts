// What a listing costs the server as JSON, CSV and NDJSON (GET /users with Accept), alone:
//   node --import tsx bench/listing-formats.ts [--records 10000] [--requests 100]
// The service as `npm start` runs it, on 127.0.0.1, over N seeded records on SQLite: for the full
// listing (JSON from its kept copy, the others streamed), the same listing streamed in every format
// (`fields` given, so JSON streams too) and a page of 1,000, the bytes and the server's CPU per
// request (user + system, from /proc), identity coding.
import { mkdtempSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, killStarted, startChild } from './child-server.ts';
import { cpuMsPerRequest } from './proc-stats.ts';
import { seedSqlite } from './seed-files.ts';
import { buildService } from './service-build.ts';

const FORMATS = [
  ['json', 'application/json'],
  ['csv', 'text/csv'],
  ['ndjson', 'application/x-ndjson'],
] as const;

const PATHS = ['/users', '/users?fields=name,age,city', '/users?limit=1000'];

/** One GET read to its end: its status, Content-Type and bytes, abandoned after 60 s. */
function fetchBody(url: string, accept: string): Promise<{ status: number; type: string; bytes: number }> {
  return new Promise((resolve, reject) => {
    const request = get(url, { agent: false, timeout: 60_000, headers: { accept } }, (answer) => {
      let bytes = 0;
      answer.on('data', (chunk: Buffer) => (bytes += chunk.length));
      answer.once('end', () =>
        resolve({ status: answer.statusCode ?? 0, type: String(answer.headers['content-type']), bytes }),
      );
      answer.once('error', reject);
    });
    request.once('timeout', () => request.destroy(new Error(`no answer from ${url} within 60 s`)));
    request.once('error', reject);
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { records: { type: 'string' }, requests: { type: 'string' } } });
  const records = Number(values.records ?? 10_000);
  const requests = Number(values.requests ?? 100);
  const root = new URL('..', import.meta.url).pathname;
  const dir = mkdtempSync(join(tmpdir(), 'user-records-bench-formats-'));
  try {
    const service = buildService(root, dir);
    const file = join(dir, 'users.db');
    await seedSqlite(file, records);
    const port = await freePort();
    // As the main run starts it (systems.ts): one worker, no rate limit, the access log to a file.
    const server = await startChild(
      {
        argv: [process.execPath, ...service.args],
        env: { DATABASE_URL: file, WORKERS: '1', RATE_LIMIT: 'off', HOST: '127.0.0.1', PORT: String(port) },
        cwd: root,
        readyPath: '/healthz',
        logFile: join(dir, 'service.log'),
      },
      port,
    );
    try {
      console.log(`${records.toLocaleString('en-US')} records, ${requests} requests each, one after another`);
      for (const path of PATHS) {
        let json = Number.NaN;
        for (const [name, accept] of FORMATS) {
          const first = await fetchBody(server.url + path, accept); // warm (the full listing is kept after its first read)
          if (first.status !== 200 || !first.type.startsWith(accept)) {
            throw new Error(`GET ${path} as ${accept}: ${first.status} ${first.type}`);
          }
          const { cpuMs } = await cpuMsPerRequest(server.pid, requests, () => fetchBody(server.url + path, accept));
          if (name === 'json') json = cpuMs;
          const size = `${(first.bytes / 1e6).toFixed(2)} MB`;
          const ratio = name === 'json' ? '' : `  ${(cpuMs / json).toFixed(2)}x JSON`;
          console.log(
            `  GET ${path.padEnd(28)} ${name.padEnd(7)} ${size.padStart(8)} ${cpuMs.toFixed(2).padStart(7)} ms CPU/request${ratio}`,
          );
        }
      }
    } finally {
      await server.stop();
    }
  } finally {
    killStarted();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
