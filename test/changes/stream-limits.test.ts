// What event streams may take: memory for the events their clients leave unread, all streams
// together (EVENTS_BUFFER_MB), and places per client (MAX_SUBSCRIBERS_PER_CLIENT). The clients that
// never read are Python sockets with a small receive buffer (helpers/stalled-streams.ts), as on a
// slow network, so what they leave unread stays on the service's side rather than in the kernel's.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { type Backend, BACKENDS } from '../helpers/backends.ts';
import { type Answer, assertProblem, call } from '../helpers/http.ts';
import { statusMB } from '../../bench/proc-stats.ts';
import { openConnections } from '../helpers/proc-stats.ts';
import { parseRawAnswer } from '../helpers/raw-http.ts';
import { scaled } from '../helpers/scale.ts';
import { type RunningServer, startServer, tempDir } from '../helpers/server.ts';
import { firstEvents, type SseEvent, sseEvents } from '../helpers/sse.ts';
import { stalledStreams } from '../helpers/stalled-streams.ts';

const servers: RunningServer[] = [];
const dirs: Array<{ cleanup(): void }> = [];
after(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  for (const dir of dirs) dir.cleanup();
});

async function serve(env: Record<string, string>): Promise<RunningServer> {
  const dir = tempDir();
  dirs.push(dir);
  const server = await startServer({ DATABASE_URL: `${dir.dir}/users.db`, RATE_LIMIT: 'off', ...env });
  servers.push(server);
  return server;
}

/** A city near the longest allowed (160 of 200 characters), for big events: fewer writes fill a stream. */
const LONG_CITY = 'Far%20Away'.repeat(20);

/** `count` creates from `concurrency` clients at once; stops early once `enough()` holds. */
async function writeRecords(
  url: string,
  count: number,
  concurrency: number,
  enough = () => false,
  city = 'Far%20Away',
): Promise<number> {
  let next = 0;
  let written = 0;
  const client = async () => {
    for (let n = next++; n < count && !enough(); n = next++) {
      const answer = await call(url, 'POST', `/users?name=Stream%20Reader%20${n}&age=${n % 151}&city=${city}`);
      assert.equal(answer.status, 200, answer.text);
      written++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, client));
  return written;
}

/** Waits until `done()` holds, looking every 50 ms, for at most `timeoutMs`; then fails with `what`. */
async function until(done: () => boolean, what: () => string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting: ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The ids of the events in a stream's text, in order. */
function eventIds(text: string): number[] {
  const ids: number[] = [];
  sseEvents((event: SseEvent) => {
    if (event.id !== undefined) ids.push(Number(event.id));
  })(text);
  return ids;
}

function assertConsecutive(ids: readonly number[], first: number, what: string): void {
  ids.forEach((id, i) => assert.equal(id, first + i, `${what}: event ${i} has id ${id}`));
}

/** One stream request from `source`: its answer, and for a 200 a close that ends it. */
function openStream(
  url: string,
  source: string,
  headers: Record<string, string> = {},
): Promise<{ answer: Answer; close(): void }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/users/events`, { localAddress: source, headers }, (res) => {
      const answer: Answer = { status: res.statusCode ?? 0, headers: new Headers(), text: '', json: undefined };
      for (const [name, value] of Object.entries(res.headers)) answer.headers.set(name, String(value));
      const close = () => req.destroy();
      if (res.statusCode === 200) return resolve({ answer, close });
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (answer.text += chunk));
      res.on('end', () => {
        answer.json = JSON.parse(answer.text);
        resolve({ answer, close });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** A stream from now on, read as it comes: the ids of its events. */
function follow(url: string): { ids: number[]; opened: Promise<void>; ended(): boolean; close(): void } {
  const ids: number[] = [];
  let ended = false;
  let closing = false;
  const req = request(`${url}/users/events`);
  const opened = new Promise<void>((resolve, reject) => {
    req.on('response', (res) => {
      if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}`));
      res.setEncoding('utf8');
      res.on(
        'data',
        sseEvents((event) => {
          if (event.id !== undefined) ids.push(Number(event.id));
        }),
      );
      res.on('close', () => (ended = !closing));
      resolve();
    });
    req.on('error', (error) => (closing ? undefined : reject(error)));
  });
  req.end();
  return {
    ids,
    opened,
    ended: () => ended,
    close: () => {
      closing = true;
      req.destroy();
    },
  };
}

/** Reads a stream resumed after `last` until `count` events came; answers their ids. */
async function resume(url: string, last: number, count: number): Promise<number[]> {
  return (await firstEvents(url, { 'last-event-id': String(last) }, count)).map((event) => Number(event.id));
}

const ENDED = 'event stream ended';
const TOKENS = ['read-token-streams-7c1e9a4d2b6f8305', 'read-token-streams-0d5b3f9e7a1c6248'];

describe('event-stream limits', () => {
  it('streams that never read, past their share of EVENTS_BUFFER_MB, are ended with a last comment, logged and counted; a resume with Last-Event-ID has no gap', async () => {
    // A long heartbeat: an ended stream keeps its connection for one heartbeat (for its last bytes).
    const server = await serve({ EVENTS_BUFFER_MB: '1', EVENTS_HEARTBEAT_MS: '600000' });
    const sources = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'];
    const stalled = await stalledStreams(server.url, { count: 20, sources, receiveBuffer: 4096 });
    try {
      assert.deepEqual(stalled.statuses, Array(20).fill(200));
      // A client that reads everything beside them: it is never ended.
      const reader = follow(server.url);
      await reader.opened;
      const ended = () => server.logs.filter((line) => line.includes(ENDED));
      // About 50 KiB each (1 MiB over 20 streams), past what their sockets take: some thousands of events.
      const written = await writeRecords(server.url, 20_000, 8, () => ended().length === 20, LONG_CITY);
      await until(
        () => ended().length === 20,
        () => `${ended().length} of 20 streams ended after ${written} writes`,
      );
      for (const line of ended()) {
        const entry = JSON.parse(line) as { level: number; reason: string; remoteAddress: string };
        assert.equal(entry.level, 40, line);
        assert.equal(entry.reason, 'slow', line);
        assert.ok(sources.includes(entry.remoteAddress), line);
      }
      const metrics = await call(server.url, 'GET', '/metrics');
      assert.match(metrics.text, /^user_records_event_streams_ended_total\{reason="slow"\} 20$/m);

      // The first stream reads now: what it was sent, a last comment telling it to resume, and the end.
      const { wire, ended: closed } = await stalled.read(0);
      assert.ok(closed, 'the service ended the stream');
      assert.ok(wire.endsWith('\r\n0\r\n\r\n'), `the answer ended cleanly: ${JSON.stringify(wire.slice(-200))}`);
      const body = parseRawAnswer(Buffer.from(wire, 'latin1')).text;
      assert.match(body, /\n: [^\n]*Last-Event-ID[^\n]*\n\n$/);
      const ids = eventIds(body);
      assert.ok(ids.length > 0 && ids.length < written, `it got ${ids.length} of ${written} events`);
      assertConsecutive(ids, 1, 'before the end');
      const last = ids.at(-1) as number;
      const rest = await resume(server.url, last, written - last);
      assertConsecutive(rest, last + 1, 'after the resume');
      await until(
        () => reader.ids.length === written,
        () => `the reading client got ${reader.ids.length} of ${written}`,
      );
      assertConsecutive(reader.ids, 1, 'the reading client');
      assert.equal(reader.ended(), false, 'the reading client was not ended');
      reader.close();
    } finally {
      await stalled.close();
    }
  });

  it('a stream stuck while catching up (its client takes nothing for a heartbeat while events wait) is ended as slow', async () => {
    // Review: a stream catching up waits for room before its next page, so it is handed no change
    // that would end it by its share; a client that never read held its place until TCP gave up.
    const server = await serve({ EVENTS_HEARTBEAT_MS: '1000' });
    const written = await writeRecords(server.url, 3000, 8, () => false, LONG_CITY);
    const stalled = await stalledStreams(server.url, {
      count: 1,
      sources: ['127.0.0.2'],
      receiveBuffer: 4096,
      headers: { 'last-event-id': '0' },
    });
    try {
      assert.deepEqual(stalled.statuses, [200]);
      const ended = () => server.logs.filter((line) => line.includes(ENDED));
      await until(
        () => ended().length === 1,
        () => `the stuck stream was not ended (${written} events wait for it)`,
      );
      assert.equal((JSON.parse(ended()[0] as string) as { reason: string }).reason, 'slow');
      // A client that reads, caught up and then idle over many heartbeats, is never ended.
      const reader = follow(server.url);
      await reader.opened;
      await new Promise((resolve) => setTimeout(resolve, 3500));
      assert.equal(reader.ended(), false);
      assert.equal(ended().length, 1);
      reader.close();
    } finally {
      await stalled.close();
    }
  });

  it('an ended stream whose client still does not read is closed one heartbeat later, and its place is free again', async () => {
    const server = await serve({ EVENTS_BUFFER_MB: '1', EVENTS_HEARTBEAT_MS: '1000', MAX_SUBSCRIBERS_PER_CLIENT: '4' });
    const port = Number(new URL(server.url).port);
    const stalled = await stalledStreams(server.url, { count: 4, sources: ['127.0.0.2'], receiveBuffer: 4096 });
    try {
      assert.deepEqual(stalled.statuses, [200, 200, 200, 200]);
      const full = await openStream(server.url, '127.0.0.2');
      assertProblem(full.answer, 429);
      const ended = () => server.logs.filter((line) => line.includes(ENDED)).length;
      await writeRecords(server.url, 20_000, 8, () => ended() === 4, LONG_CITY);
      await until(
        () => ended() === 4,
        () => `${ended()} of 4 streams ended`,
      );
      await until(
        () => openConnections(port) === 0,
        () => `${openConnections(port)} connections still open`,
      );
      const again = await openStream(server.url, '127.0.0.2');
      assert.equal(again.answer.status, 200, again.answer.text);
      again.close();
    } finally {
      await stalled.close();
    }
  });

  const cases: Array<{
    name: string;
    env: Record<string, string>;
    holder: { source: string; headers?: Record<string, string> };
    other: { source: string; headers?: Record<string, string> };
    otherStatus: number;
  }> = [
    { name: 'by address', env: {}, holder: { source: '127.0.0.1' }, other: { source: '127.0.0.2' }, otherStatus: 200 },
    {
      name: 'behind a trusted proxy, by the forwarded address',
      env: { TRUST_PROXY: '127.0.0.1' },
      holder: { source: '127.0.0.1', headers: { 'x-forwarded-for': '203.0.113.7' } },
      other: { source: '127.0.0.1', headers: { 'x-forwarded-for': '203.0.113.8' } },
      otherStatus: 200,
    },
    {
      name: 'X-Forwarded-For from an address not trusted names no one else',
      env: {},
      holder: { source: '127.0.0.1', headers: { 'x-forwarded-for': '203.0.113.7' } },
      other: { source: '127.0.0.1', headers: { 'x-forwarded-for': '203.0.113.8' } },
      otherStatus: 429,
    },
    {
      name: 'with tokens, by address and token',
      env: { API_TOKENS: `read:${TOKENS[0]},read:${TOKENS[1]}` },
      holder: { source: '127.0.0.1', headers: { authorization: `Bearer ${TOKENS[0]}` } },
      other: { source: '127.0.0.1', headers: { authorization: `Bearer ${TOKENS[1]}` } },
      otherStatus: 200,
    },
  ];
  for (const { name, env, holder, other, otherStatus } of cases) {
    it(`MAX_SUBSCRIBERS_PER_CLIENT, ${name}: past it 429 with Retry-After in the problem shape; another client still gets a stream`, async () => {
      const server = await serve({ MAX_SUBSCRIBERS_PER_CLIENT: '3', ...env });
      const held = await Promise.all([1, 2, 3].map(() => openStream(server.url, holder.source, holder.headers)));
      try {
        assert.deepEqual(
          held.map((stream) => stream.answer.status),
          [200, 200, 200],
        );
        const refused = await openStream(server.url, holder.source, holder.headers);
        const body = assertProblem(refused.answer, 429);
        assert.equal(body.type, '/problems/too-many-streams');
        assert.match(refused.answer.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
        const another = await openStream(server.url, other.source, other.headers);
        assert.equal(another.answer.status, otherStatus, another.answer.text);
        another.close();
        // A stream that ends gives its place back.
        held.pop()?.close();
        let status = 0;
        for (let tries = 0; tries < 200 && status !== 200; tries++) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          const retry = await openStream(server.url, holder.source, holder.headers);
          status = retry.answer.status;
          retry.close();
        }
        assert.equal(status, 200, 'a place was free again');
      } finally {
        for (const stream of held) stream.close();
      }
    });
  }

  const streams = scaled(100, 500);
  const addresses = scaled(10, 50);
  const records = scaled(2000, 12_000);
  it(`${streams} streams that never read, from ${addresses} addresses, while ${records} records are written: the service stays under 400 MB`, async (t) => {
    const server = await serve({});
    const rss = () => statusMB(server.pid, 'VmRSS') ?? 0;
    const before = rss();
    const sources = Array.from({ length: addresses }, (_, i) => `127.0.0.${i + 2}`);
    const stalled = await stalledStreams(server.url, { count: streams, sources, receiveBuffer: 4096 });
    let peak: number;
    let during: number;
    try {
      assert.deepEqual(stalled.statuses, Array(streams).fill(200));
      await writeRecords(server.url, records, 16);
      during = rss();
      peak = statusMB(server.pid, 'VmHWM') ?? 0;
    } finally {
      await stalled.close();
    }
    const port = Number(new URL(server.url).port);
    await until(
      () => openConnections(port) === 0,
      () => `${openConnections(port)} connections still open`,
    );
    const metrics = await call(server.url, 'GET', '/metrics');
    assert.match(metrics.text, /^user_records_event_subscribers 0$/m);
    const left = rss();
    t.diagnostic(
      `the service's RSS (MB): ${before.toFixed(0)} before, ${during.toFixed(0)} after the writes, peak ${peak.toFixed(0)}, ${left.toFixed(0)} once the streams left`,
    );
    assert.ok(peak < 400, `peak RSS ${peak.toFixed(0)} MB`);
  });
});

// Review: a place was taken before the first read of the log and given back only by listeners added
// after it, so a client that left during that read (a round trip to PostgreSQL) held its place for
// good. The read is held here by a lock on the table it reads, and the client leaves meanwhile.
const postgresql = BACKENDS.find((backend) => backend.name === 'postgresql') as Backend;
describe('event-stream places [postgresql]', { skip: postgresql.skip }, () => {
  it('a client that leaves while its stream waits for the database gives its place back', async () => {
    const database = await postgresql.fresh();
    const server = await startServer({
      DATABASE_URL: database.url,
      RATE_LIMIT: 'off',
      MAX_SUBSCRIBERS_PER_CLIENT: '1',
    });
    const locker = new pg.Client({ connectionString: database.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE store_version IN ACCESS EXCLUSIVE MODE');
      const waiting = async () =>
        Number(
          (
            await locker.query(
              `SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
            )
          ).rows[0].n,
        );
      const before = await waiting();
      const leaving = request(`${server.url}/users/events`);
      leaving.on('error', () => undefined);
      leaving.end();
      for (let tries = 0; (await waiting()) <= before; tries++) {
        assert.ok(tries < 400, 'the stream never asked the database');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      leaving.destroy();
      // Time for the service to see the client gone while its read still waits (should it see it
      // only later, its listeners give the place back and the test passes either way).
      await new Promise((resolve) => setTimeout(resolve, 200));
      await locker.query('COMMIT');
      let status = 0;
      for (let tries = 0; tries < 100 && status !== 200; tries++) {
        const answer = await fetch(`${server.url}/users/events`, { method: 'HEAD' });
        status = answer.status;
        if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.equal(status, 200, 'the place of the client that left is free');
    } finally {
      await locker.end();
      await server.stop();
      await database.drop();
    }
  });
});
