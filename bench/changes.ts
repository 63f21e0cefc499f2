// The change stream and webhooks, measured on both stores: commit-to-event latency (against the
// write's own latency, measured in the same run), events per second delivered to 100 subscribers,
// webhook deliveries per second to one receiver, and the service's memory with 1,000 idle
// subscribers (against its memory with none). `node --import tsx bench/changes.ts [--writes N]`.
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, killStarted, startChild } from './child-server.ts';
import { startPostgres } from './postgres.ts';
import { statusMB } from './proc-stats.ts';
import { buildService } from './service-build.ts';
import { sseEvents } from '../test/helpers/sse.ts';

const { values } = parseArgs({ options: { writes: { type: 'string', default: '2000' } } });
const WRITES = Number(values.writes);
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const ROOT = new URL('..', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'user-records-bench-changes-'));
process.once('exit', () => {
  killStarted();
  rmSync(work, { recursive: true, force: true });
});

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
const ms = (value: number) => `${value.toFixed(1)} ms`;
const keepAlive = new Agent({ keepAlive: true, maxSockets: 20 });

/** One POST; resolves when answered. */
function post(url: string, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method: 'POST', agent: keepAlive }, (res) => {
      res.resume();
      res.once('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`POST ${res.statusCode}`))));
    });
    req.once('error', reject);
    req.end();
  });
}

/** A subscriber that calls `onEvent(id)` at each event's arrival. */
function subscribe(url: string, onEvent: (id: number) => void): Promise<() => void> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/users/events`, { agent: false }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream ${res.statusCode}`));
      res.setEncoding('utf8');
      res.on(
        'data',
        sseEvents((event) => {
          if (event.id !== undefined) onEvent(Number(event.id));
        }),
      );
      resolve(() => req.destroy());
    });
    req.once('error', reject);
    req.end();
  });
}

async function waitFor(done: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function measure(store: string, databaseUrl: string, entry: string[]): Promise<void> {
  const received = { count: 0, first: 0, last: 0 };
  const receiver = createServer((req, res) => {
    req.resume();
    req.once('end', () => {
      received.count++;
      received.last = performance.now();
      if (received.count === 1) received.first = received.last;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const port = await freePort();
  const server = await startChild(
    {
      argv: [process.execPath, ...entry],
      env: {
        HOST: '127.0.0.1',
        PORT: String(port),
        DATABASE_URL: databaseUrl,
        LOG_LEVEL: 'warn',
        RATE_LIMIT: 'off',
        OVERLOAD_LAG_MS: '0',
        MAX_SUBSCRIBERS: '1100',
        WEBHOOK_URLS: hook,
        WEBHOOK_SECRET: SECRET,
      },
      cwd: ROOT,
      readyPath: '/readyz',
      logFile: join(work, `${store}.log`),
    },
    port,
  );
  try {
    // 1. Commit to event: one subscriber, sequential writes; the write's own latency is the baseline.
    const sentAt = new Map<number, number>();
    const eventLatency: number[] = [];
    let version = 0;
    const stopOne = await subscribe(server.url, (id) => {
      const sent = sentAt.get(id);
      if (sent !== undefined) eventLatency.push(performance.now() - sent);
    });
    const writeLatency: number[] = [];
    for (let n = 0; n < 500; n++) {
      version++;
      const t0 = performance.now();
      sentAt.set(version, t0);
      await post(server.url, `/users?name=L${n}&age=30&city=Oslo`);
      writeLatency.push(performance.now() - t0);
    }
    await waitFor(() => eventLatency.length >= 500, 30_000, 'events of the sequential writes');
    stopOne();
    eventLatency.sort((a, b) => a - b);
    writeLatency.sort((a, b) => a - b);

    // 2. Fan-out: 100 subscribers, WRITES writes from 20 clients.
    const counts = new Array<number>(100).fill(0);
    const stops = await Promise.all(
      counts.map((_, i) => subscribe(server.url, () => (counts[i] = (counts[i] ?? 0) + 1))),
    );
    await waitFor(() => received.count >= 500, 60_000, 'webhooks of the sequential writes');
    const before = received.count;
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        for (let n = next++; n < WRITES; n = next++) await post(server.url, `/users?name=F${n}&age=40&city=Rome`);
      }),
    );
    await waitFor(() => counts.every((count) => count >= WRITES), 120_000, 'fan-out to 100 subscribers');
    const fanOutSeconds = (performance.now() - t0) / 1000;
    for (const stop of stops) stop();
    await waitFor(() => received.count >= before + WRITES, 120_000, 'webhook deliveries');
    const hookSeconds = (received.last - t0) / 1000;

    // 3. Memory: none, then 1,000 idle subscribers.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const rssBefore = statusMB(server.pid, 'VmRSS') ?? Number.NaN;
    const idle = await Promise.all(Array.from({ length: 1000 }, () => subscribe(server.url, () => undefined)));
    await new Promise((resolve) => setTimeout(resolve, 500));
    const rssIdle = statusMB(server.pid, 'VmRSS') ?? Number.NaN;
    for (const stop of idle) stop();

    console.log(`\n${store}`);
    console.log(
      `  commit -> event (500 sequential writes, 1 subscriber): p50 ${ms(percentile(eventLatency, 50))}, p99 ${ms(percentile(eventLatency, 99))}` +
        `; the write itself: p50 ${ms(percentile(writeLatency, 50))}, p99 ${ms(percentile(writeLatency, 99))}`,
    );
    console.log(
      `  ${WRITES} writes from 20 clients to 100 subscribers: ${Math.round((WRITES * 100) / fanOutSeconds).toLocaleString('en')} events/s delivered (${Math.round(WRITES / fanOutSeconds).toLocaleString('en')} writes/s, every subscriber had all in ${fanOutSeconds.toFixed(2)} s)`,
    );
    console.log(
      `  webhooks to one receiver: ${Math.round(WRITES / hookSeconds).toLocaleString('en')} deliveries/s (${WRITES} in ${hookSeconds.toFixed(2)} s from the first write)`,
    );
    console.log(
      `  memory: ${rssBefore.toFixed(0)} MB with no subscriber, ${rssIdle.toFixed(0)} MB with 1,000 idle ones (+${(rssIdle - rssBefore).toFixed(0)} MB)`,
    );
  } finally {
    await server.stop();
    receiver.close();
  }
}

const service = buildService(ROOT, work);
console.log(`user-records bundle; ${WRITES} writes for fan-out and webhooks`);
await measure('sqlite', join(work, 'users.db'), service.args);
const cluster = await startPostgres();
if (typeof cluster === 'string') console.log(`\npostgresql skipped: ${cluster}`);
else {
  try {
    await measure('postgresql', cluster.url, service.args);
  } finally {
    await cluster.stop();
  }
}
process.exit(0);
