import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { writeFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { EventSource } from 'eventsource';
import { Webhook } from 'standardwebhooks';
import { BACKENDS, type Database } from '../helpers/backends.ts';
import { runCli } from '../helpers/cli.ts';
import { call } from '../helpers/http.ts';
import { Latencies } from '../helpers/latency.ts';
import { type RunningServer, startServer, tempDir } from '../helpers/server.ts';
import { firstEvents } from '../helpers/sse.ts';

/** An event as a subscriber saw it. */
interface Seen {
  id: number;
  type: string;
  data: { id: number; name: string; age: string; city: string };
}

/** Waits until `done()` holds, looking every 50 ms, for at most `timeoutMs`; then fails with `what`. */
async function until(done: () => boolean, what: () => string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting: ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A subscriber with the `eventsource` package (the WHATWG EventSource for Node), keeping every event. */
function subscribe(url: string, after?: number): { events: Seen[]; close(): void; opened: Promise<void> } {
  const events: Seen[] = [];
  const source = new EventSource(`${url}/users/events${after === undefined ? '' : `?after=${after}`}`);
  const take = (message: MessageEvent) => {
    const body = JSON.parse(message.data as string) as { type: string; data: Seen['data'] };
    assert.equal(body.type, message.type);
    events.push({ id: Number(message.lastEventId), type: body.type, data: body.data });
  };
  for (const type of ['user.created', 'user.updated', 'user.deleted']) source.addEventListener(type, take);
  const opened = new Promise<void>((resolve, reject) => {
    source.onopen = () => resolve();
    source.onerror = (error) => {
      if (source.readyState === EventSource.CLOSED) reject(new Error(`event stream failed: ${error.message}`));
    };
  });
  return { events, close: () => source.close(), opened };
}

/** Applies the events in order to an empty collection: what a subscriber knows the records to be. */
function replay(events: readonly Seen[]): Map<number, string> {
  const records = new Map<number, string>();
  for (const { type, data } of events) {
    if (type === 'user.deleted') records.delete(data.id);
    else records.set(data.id, JSON.stringify({ name: data.name, age: data.age, city: data.city }));
  }
  return records;
}

async function listing(url: string): Promise<Map<number, string>> {
  const answer = await call(url, 'GET', '/users?fields=id,name,age,city');
  assert.equal(answer.status, 200);
  return new Map(
    (answer.json.data as Array<Seen['data']>).map((r) => [
      r.id,
      JSON.stringify({ name: r.name, age: r.age, city: r.city }),
    ]),
  );
}

/** Every event once, in change-version order, with no gap: versions first+1, first+2, ... */
function assertConsecutive(events: readonly Seen[], first: number, what: string): void {
  events.forEach((event, i) => assert.equal(event.id, first + i + 1, `${what}: event ${i} has id ${event.id}`));
}

/**
 * `total` writes (creates, then updates and deletes of created records) from `concurrency` clients at
 * once, spread over the servers; answers how many were answered 200 (each made one change).
 */
async function writes(urls: readonly string[], total: number, concurrency: number): Promise<number> {
  const created: number[] = [];
  let next = 0;
  let changed = 0;
  const client = async (c: number) => {
    for (let n = next++; n < total; n = next++) {
      const url = urls[(n + c) % urls.length] as string;
      const target = created.length > 10 ? created[Math.floor(Math.random() * created.length)] : undefined;
      const roll = n % 10;
      const answer =
        target === undefined || roll < 6
          ? await call(url, 'POST', `/users?name=w${n}&age=${n % 151}&city=c${n % 7}&fields=id`)
          : roll < 9
            ? await call(url, 'PATCH', `/users/${target}?city=u${n}`)
            : await call(url, 'DELETE', `/users/${target}`);
      assert.ok(answer.status === 200 || answer.status === 404, `write ${n}: ${answer.status} ${answer.text}`);
      if (answer.status !== 200) continue;
      changed++;
      if (answer.json.data[0]?.id !== undefined && roll < 6) created.push(answer.json.data[0].id);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, c) => client(c)));
  return changed;
}

for (const backend of BACKENDS) {
  describe(`change stream (${backend.name})`, { skip: backend.skip }, () => {
    const servers: RunningServer[] = [];
    const databases: Database[] = [];
    const dirs: Array<{ cleanup(): void }> = [];
    after(async () => {
      await Promise.all(servers.map((server) => server.stop()));
      await Promise.all(databases.map((database) => database.drop()));
      for (const dir of dirs) dir.cleanup();
    });
    const fresh = async (): Promise<string> => {
      if (backend.name === 'postgresql') {
        const database = await backend.fresh();
        databases.push(database);
        return database.url;
      }
      const dir = tempDir();
      dirs.push(dir);
      return `${dir.dir}/users.db`;
    };
    const serve = async (env: Record<string, string>) => {
      const server = await startServer(env);
      servers.push(server);
      return server;
    };

    it('600 concurrent writes through two processes: a subscriber on each sees every change once, in order, as the final listing', async () => {
      const database = await fresh();
      // PostgreSQL: two instances; SQLite: one service of two workers (one file, one port).
      const urls =
        backend.name === 'postgresql'
          ? [(await serve({ DATABASE_URL: database })).url, (await serve({ DATABASE_URL: database })).url]
          : [(await serve({ DATABASE_URL: database, WORKERS: '2' })).url];
      const subscribers = [0, 1].map((i) => subscribe(urls[i % urls.length] as string, 0));
      await Promise.all(subscribers.map((s) => s.opened));
      const changed = await writes(urls, 600, 24);
      for (const [i, s] of subscribers.entries()) {
        await until(
          () => s.events.length >= changed,
          () => `subscriber ${i} saw ${s.events.length} of ${changed} changes`,
        );
      }
      const final = await listing(urls[0] as string);
      for (const [i, s] of subscribers.entries()) {
        assertConsecutive(s.events, 0, `subscriber ${i}`);
        assert.equal(s.events.length, changed, `subscriber ${i}: no event beyond the ${changed} changes`);
        assert.deepEqual(replay(s.events), final, `subscriber ${i}: its events add up to the listing`);
        s.close();
      }
    });

    it('a subscriber that disconnects halfway and comes back with Last-Event-ID misses nothing and repeats nothing', async () => {
      const server = await serve({ DATABASE_URL: await fresh() });
      const first = subscribe(server.url, 0);
      await first.opened;
      const changedBefore = await writes([server.url], 60, 6);
      await until(
        () => first.events.length >= changedBefore / 2,
        () => `first half: ${first.events.length}`,
      );
      first.close();
      const kept = first.events.slice();
      const changedAfter = await writes([server.url], 60, 6);
      // The header a browser's EventSource sends when it reconnects, here on a plain request.
      const last = kept.at(-1)?.id as number;
      const rest = await readStream(
        server.url,
        { 'last-event-id': String(last) },
        changedBefore + changedAfter - kept.length,
      );
      const all = [...kept, ...rest];
      assertConsecutive(all, 0, 'before and after the reconnection');
      assert.deepEqual(replay(all), await listing(server.url));
      // `after` does the same for clients that cannot send the header; Last-Event-ID wins over it.
      const again = await readStream(server.url, { 'last-event-id': String(last) }, rest.length, `?after=0`);
      assert.deepEqual(again, rest);
    });

    it('a client that leaves gives its MAX_SUBSCRIBERS place back at once, not at the next write', async () => {
      // No keep-alive comment within the test: only the client's leaving can free the places.
      const server = await serve({ DATABASE_URL: await fresh(), MAX_SUBSCRIBERS: '2', EVENTS_HEARTBEAT_MS: '600000' });
      for (let round = 0; round < 3; round++) {
        const streams = [subscribe(server.url), subscribe(server.url)];
        await Promise.all(streams.map((s) => s.opened));
        const third = await call(server.url, 'GET', '/users/events');
        assert.equal(third.status, 503, `round ${round}: a third stream is past the limit`);
        for (const s of streams) s.close();
        let status = 0;
        for (let wait = 0; wait < 200 && status !== 200; wait++) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          status = await new Promise<number>((resolve, reject) => {
            const req = request(`${server.url}/users/events`, (res) => {
              resolve(res.statusCode ?? 0);
              req.destroy();
            });
            req.on('error', reject);
            req.end();
          });
        }
        assert.equal(status, 200, `round ${round}: a place was free again after the clients left`);
      }
    });

    it('refuses what it cannot serve, in the problem shape: bad ids (400), ids the log no longer holds (410), other methods (405)', async () => {
      const server = await serve({ DATABASE_URL: await fresh(), CHANGES_RETENTION: '1s' });
      await writes([server.url], 5, 1);
      // Older than the retention; the next commit prunes them.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await writes([server.url], 1, 1);
      const gone = await call(server.url, 'GET', '/users/events?after=1');
      assert.equal(gone.status, 410, gone.text);
      assert.equal(gone.json.type, '/problems/event-id-expired');
      const ahead = await call(server.url, 'GET', '/users/events', { headers: { 'last-event-id': '999' } });
      assert.equal(ahead.status, 410, ahead.text);
      const kept = await readStream(server.url, { 'last-event-id': '5' }, 1);
      assert.deepEqual(
        kept.map((event) => event.id),
        [6],
      );
      for (const [header, query] of [
        ['x', ''],
        ['1.5', ''],
        ['', '?after=-1'],
        ['', '?after=1&limit=3'],
      ] as const) {
        const bad = await call(server.url, 'GET', `/users/events${query}`, {
          headers: header === '' ? {} : { 'last-event-id': header },
        });
        assert.equal(bad.status, 400, `${header} ${query}: ${bad.text}`);
        assert.equal(bad.json.type, '/problems/invalid-input');
      }
      const post = await call(server.url, 'POST', '/users/events');
      assert.equal(post.status, 405);
      assert.equal(post.headers.get('allow'), 'GET, HEAD, OPTIONS');
      const head = await call(server.url, 'HEAD', '/users/events');
      assert.equal(head.status, 200);
      assert.match(head.headers.get('content-type') ?? '', /^text\/event-stream/);
    });

    it('an idle stream gets a comment every EVENTS_HEARTBEAT_MS; with tokens it needs one, a read token will do', async () => {
      const read = 'read-token-events-5e8b2d7c4a1f0963aa';
      const server = await serve({
        DATABASE_URL: await fresh(),
        EVENTS_HEARTBEAT_MS: '1000',
        API_TOKENS: `read:${read},write:write-token-events-0a4c6e1f3b5d7928`,
      });
      const none = await call(server.url, 'GET', '/users/events');
      assert.equal(none.status, 401);
      const url = server.url;
      const text = await new Promise<string>((resolve, reject) => {
        let body = '';
        const req = request(`${url}/users/events`, { headers: { authorization: `Bearer ${read}` } }, (res) => {
          if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}`));
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            body += chunk;
            if (body.includes(': keep-alive\n\n')) {
              req.destroy();
              resolve(body);
            }
          });
        });
        req.on('error', reject);
        req.setTimeout(30_000, () => req.destroy(new Error(`no keep-alive came: ${JSON.stringify(body)}`)));
        req.end();
      });
      assert.match(text, /^retry: \d+\n: changes after \d+\n\n/);
    });

    it('a client that does not read is disconnected once its unsent events pass the bound, and the others go on', async () => {
      const url = await fresh();
      const dir = tempDir();
      dirs.push(dir);
      const server = await serve({ DATABASE_URL: url });
      const { port } = new URL(server.url);
      // A client that sends its request and never reads: what it is sent piles up in the service.
      const stalled = connect(Number(port), '127.0.0.1');
      stalled.pause();
      let received = '';
      const closed = new Promise<void>((resolve) => stalled.once('close', () => resolve()));
      stalled.on('error', () => undefined);
      stalled.write(`GET /users/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
      const reader = subscribe(server.url);
      await reader.opened;
      // About 12 MB of events, more than the bound (1 MiB) and the sockets' buffers together.
      const rows = 80_000;
      const csv = `${dir.dir}/many.csv`;
      writeFileSync(
        csv,
        `name,age,city\n${Array.from({ length: rows }, (_, i) => `Reader Number ${i},${i % 151},Somewhere Far Away`).join('\n')}\n`,
      );
      const imported = await runCli(['import', csv, '--quiet'], { env: { DATABASE_URL: url } });
      assert.equal(imported.code, 0, imported.stderr);
      await until(
        () => reader.events.length >= rows,
        () => `the reading client got ${reader.events.length} of ${rows}`,
      );
      // Now it reads: what the sockets held, then the end the service gave it long before the last event.
      stalled.setEncoding('latin1');
      stalled.on('data', (chunk: string) => (received += chunk));
      stalled.resume();
      await Promise.race([
        closed,
        new Promise((_, reject) =>
          setTimeout(() => reject(new Error('the stalled client was not disconnected')), 60_000),
        ),
      ]);
      const got = received.split('\nevent: ').length - 1;
      assert.ok(got > 0 && got < rows, `the stalled client got ${got} of ${rows} events before it was cut off`);
      assertConsecutive(reader.events, 0, 'the reading client');
      reader.close();
      assert.equal((await call(server.url, 'GET', '/readyz')).status, 200);
    });
  });

  describe(`webhooks (${backend.name})`, { skip: backend.skip }, () => {
    const cleanups: Array<() => Promise<void> | void> = [];
    after(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup();
    });
    const database = async (): Promise<string> => {
      if (backend.name === 'postgresql') {
        const fresh = await backend.fresh();
        cleanups.push(() => fresh.drop());
        return fresh.url;
      }
      const dir = tempDir();
      cleanups.push(() => dir.cleanup());
      return `${dir.dir}/users.db`;
    };
    const serve = async (env: Record<string, string>) => {
      const server = await startServer(env);
      cleanups.push(async () => void (await server.stop()));
      return server;
    };

    it('SIGKILL with deliveries in flight, then a restart: one delivery per answered write, each verified, in order', async () => {
      const receiver = await startReceiver();
      cleanups.push(() => receiver.close());
      const env = { DATABASE_URL: await database(), WEBHOOK_URLS: receiver.url, WEBHOOK_SECRET: receiver.secret };
      const server = await serve(env);
      const answered: number[] = [];
      // Writers keep going while the server is killed: some writes are answered, the rest fail.
      const writers = Array.from({ length: 8 }, async (_, w) => {
        for (let n = 0; n < 40; n++) {
          try {
            const answer = await call(server.url, 'POST', `/users?name=k${w}-${n}&age=${n}&city=Oslo&fields=id`);
            if (answer.status === 200) answered.push(answer.json.data[0].id);
          } catch {
            return;
          }
        }
      });
      await until(
        () => receiver.unique.size >= 20,
        () => `deliveries before the kill: ${receiver.unique.size}`,
      );
      process.kill(server.pid, 'SIGKILL');
      await Promise.all(writers);
      await server.stop();
      const restarted = await serve(env);
      await until(
        () => answered.every((id) => receiver.createdIds.has(id)),
        () =>
          `delivered ${answered.filter((id) => receiver.createdIds.has(id)).length} of ${answered.length} answered writes`,
      );
      assert.deepEqual(receiver.invalid, [], 'every delivery carries a valid signature');
      // Redeliveries after the restart repeat an id; a receiver that dedupes sees each change once, in order.
      const versions = receiver.firstSeen.map((delivery) => delivery.version);
      assert.deepEqual(
        versions,
        [...versions].sort((a, b) => a - b),
        'first deliveries in change-version order',
      );
      assert.equal(new Set(receiver.firstSeen.map((d) => d.recordId)).size, receiver.firstSeen.length);
      assert.ok(answered.length > 20, `writes answered before the kill: ${answered.length}`);
      await restarted.stop();
    });

    it('a restore while the service runs: the new history is delivered and streamed, ids of the old one answer 410', async () => {
      const receiver = await startReceiver();
      cleanups.push(() => receiver.close());
      const dir = tempDir();
      cleanups.push(() => dir.cleanup());
      const env = { DATABASE_URL: await database(), WEBHOOK_URLS: receiver.url, WEBHOOK_SECRET: receiver.secret };
      const server = await serve(env);
      const create = async (name: string) =>
        (await call(server.url, 'POST', `/users?name=${name}&age=30&city=Oslo&fields=id`)).json.data[0].id as number;
      for (let n = 0; n < 5; n++) await create(`before${n}`);
      const backup = `${dir.dir}/users.backup`;
      const saved = await runCli(['backup', backup, '--quiet'], { env: { DATABASE_URL: env.DATABASE_URL } });
      assert.equal(saved.code, 0, saved.stderr);
      const later: number[] = [];
      for (let n = 0; n < 5; n++) later.push(await create(`later${n}`));
      await until(
        () => later.every((id) => receiver.createdIds.has(id)),
        () => 'deliveries before the restore',
      );
      const restored = await runCli(['restore', backup, '--replace', '--quiet'], {
        env: { DATABASE_URL: env.DATABASE_URL },
      });
      assert.equal(restored.code, 0, restored.stderr);
      // The restore went back to version 5 from 10: a stream with no id still starts, from now.
      const now = await fetch(`${server.url}/users/events`, { method: 'HEAD' });
      assert.equal(now.status, 200, 'a new stream right after a restore to an older moment');
      // The new history's versions 6 to 10 repeat the old one's: both kinds of client must notice.
      const after: number[] = [];
      for (let n = 0; n < 7; n++) after.push(await create(`after${n}`));
      await until(
        () => after.every((id) => receiver.everyCreate.includes(id)),
        () =>
          `new history delivered: ${after.filter((id) => receiver.everyCreate.includes(id)).length} of ${after.length}`,
      );
      // 10 was the old history's last id: a client that saw it missed the restore.
      for (const id of ['8', '10']) {
        const old = await call(server.url, 'GET', '/users/events', { headers: { 'last-event-id': id } });
        assert.equal(old.status, 410, `an id of the old history, ${id}: ${old.text}`);
      }
      const fresh = await readStream(server.url, { 'last-event-id': '11' }, 1);
      assert.equal(fresh[0]?.data.name, 'after6');
      const metrics = await call(server.url, 'GET', '/metrics');
      assert.match(metrics.text, /^user_records_webhook_deliveries_total\{outcome="delivered"\} [1-9]/m);
      assert.match(metrics.text, /^user_records_events_sent_total [1-9]/m);
      assert.match(metrics.text, /^user_records_event_subscribers \d+/m);
    });

    it('a receiver that is down for a while catches up in order; 1,000 idle subscribers and a receiver that never answers leave the API as it was', async (t) => {
      const receiver = await startReceiver();
      cleanups.push(() => receiver.close());
      const silent = await startSilentReceiver();
      cleanups.push(() => silent.close());
      const server = await serve({
        DATABASE_URL: await database(),
        WEBHOOK_URLS: `${receiver.url},${silent.url}`,
        WEBHOOK_SECRET: receiver.secret,
        WEBHOOK_TIMEOUT_MS: '60000',
        MAX_SUBSCRIBERS: '1000',
        // All from this one address, refused by MAX_SUBSCRIBERS alone.
        MAX_SUBSCRIBERS_PER_CLIENT: '1000000',
        RATE_LIMIT: 'off',
      });
      const before = await readLatency(server.url);

      receiver.down = true;
      const ids: number[] = [];
      for (let n = 0; n < 20; n++) {
        ids.push((await call(server.url, 'POST', `/users?name=d${n}&age=${n}&city=Lima&fields=id`)).json.data[0].id);
      }
      await until(
        () => receiver.refused >= 2,
        () => `refused attempts: ${receiver.refused}`,
      );
      receiver.down = false;
      await until(
        () => ids.every((id) => receiver.createdIds.has(id)),
        () => `caught up ${receiver.createdIds.size} of ${ids.length}`,
      );
      assert.deepEqual(
        receiver.firstSeen.map((d) => d.recordId).filter((id) => id >= (ids[0] as number)),
        ids,
        'caught up in the order of the writes',
      );
      assert.deepEqual(receiver.invalid, []);

      const idle = await openIdleStreams(server.url, 1000);
      cleanups.push(() => idle.close());
      const refused = await call(server.url, 'GET', '/users/events');
      assert.equal(refused.status, 503, 'past MAX_SUBSCRIBERS');
      assert.equal(refused.json.type, '/problems/unavailable');
      const during = await readLatency(server.url);
      await call(server.url, 'POST', '/users?name=Last&age=1&city=Lima');
      await until(
        () => idle.received() >= 1000,
        () => `idle streams that got the last write: ${idle.received()}`,
      );
      assert.equal(idle.closed(), 0, 'no stream was dropped');
      assert.ok(silent.open >= 1, 'the silent receiver holds a delivery open');
      t.diagnostic(
        `GET /users/{id} alone: ${before}; with a receiver that never answers and 1,000 idle subscribers: ${during}`,
      );
    });
  });
}

/** Reads a stream with these headers until `count` events came; answers them. */
async function readStream(url: string, headers: Record<string, string>, count: number, query = ''): Promise<Seen[]> {
  return (await firstEvents(url, headers, count, query)).map((event) => {
    const body = JSON.parse(event.data as string) as { type: string; data: Seen['data'] };
    assert.equal(body.type, event.event);
    return { id: Number(event.id), type: body.type, data: body.data };
  });
}

interface Delivery {
  version: number;
  recordId: number;
}

/** A webhook receiver as its users would write one: it verifies with `standardwebhooks` and dedupes by webhook-id. */
async function startReceiver() {
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const verifier = new Webhook(secret);
  const state = {
    secret,
    url: '',
    down: false,
    refused: 0,
    invalid: [] as string[],
    unique: new Set<string>(),
    firstSeen: [] as Delivery[],
    /** Every verified delivery, repeats too: the record ids of the creates. */
    everyCreate: [] as number[],
    createdIds: new Set<number>(),
    close: (): Promise<void> => Promise.resolve(),
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      if (state.down) {
        state.refused++;
        res.writeHead(503).end();
        return;
      }
      let payload: { type: string; data: { id: number } };
      try {
        payload = verifier.verify(body, req.headers as Record<string, string>) as typeof payload;
      } catch (error) {
        state.invalid.push((error as Error).message);
        res.writeHead(400).end();
        return;
      }
      const id = String(req.headers['webhook-id']);
      if (payload.type === 'user.created') state.everyCreate.push(payload.data.id);
      if (!state.unique.has(id)) {
        state.unique.add(id);
        state.firstSeen.push({ version: Number(id.replace('msg_', '')), recordId: payload.data.id });
        if (payload.type === 'user.created') state.createdIds.add(payload.data.id);
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  state.close = () => new Promise((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  return state;
}

/** A receiver that takes each request and never answers it. */
async function startSilentReceiver() {
  const held: ServerResponse[] = [];
  const server = createServer((_req, res) => void held.push(res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    get open() {
      return held.length;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of held) res.destroy();
        server.close(() => resolve());
      }),
  };
}

/** `count` streams that only wait for events; counts those that got one and those that closed. */
async function openIdleStreams(url: string, count: number) {
  let received = 0;
  let closed = 0;
  const requests = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof request>>((resolve, reject) => {
          const req = request(`${url}/users/events`, (res) => {
            if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
            let got = false;
            res.on('data', (chunk: Buffer) => {
              if (!got && chunk.includes('event: user.created')) {
                got = true;
                received++;
              }
            });
            res.on('close', () => closed++);
            resolve(req);
          });
          req.on('error', reject);
          req.end();
        }),
    ),
  );
  return {
    received: () => received,
    closed: () => closed,
    close: () => {
      for (const req of requests) req.destroy();
    },
  };
}

/** p50/p99 of 300 sequential reads of one record, as text for the test's report. */
async function readLatency(url: string): Promise<string> {
  const created = await call(url, 'POST', '/users?name=Probe&age=1&city=Lima&fields=id');
  const path = `/users/${created.json.data[0].id}`;
  const latencies = new Latencies();
  for (let n = 0; n < 300; n++) {
    const answer = await latencies.time(() => call(url, 'GET', path));
    assert.equal(answer.status, 200);
  }
  return `p50 ${latencies.percentile(50)} ms, p99 ${latencies.percentile(99)} ms`;
}
