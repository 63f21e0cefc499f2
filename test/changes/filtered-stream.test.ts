import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { type ClientRequest, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { ConfigError } from '../../src/config/load.ts';
import { EVENT_RULES, LISTING_ONLY } from '../../src/changes/schemas.ts';
import { webhookTargets } from '../../src/changes/webhook-filter.ts';
import { ChangeView } from '../../src/changes/view.ts';
import type { Change, ListFilter, User } from '../../src/store/store.ts';
import { BACKENDS, type Database } from '../helpers/backends.ts';
import { runCli } from '../helpers/cli.ts';
import { call } from '../helpers/http.ts';
import { type RunningServer, startServer, tempDir } from '../helpers/server.ts';
import { sseEvents } from '../helpers/sse.ts';

/** A record as events and listings show it. */
interface Shown {
  id: number;
  name: string;
  age: string;
  city: string;
}

interface Seen {
  id: number;
  type: string;
  data: Shown;
}

/** A stream read off the wire, as an EventSource would keep it. */
interface Follower {
  events: Seen[];
  /** The last id the stream gave, by an event or by a filtered stream's heartbeat: its Last-Event-ID. */
  lastId: number | undefined;
  /** Everything it sent. */
  raw: string;
  opened: Promise<void>;
  close(): void;
}

/** Follows `GET /users/events{query}` with these headers, keeping every event and the last id given. */
function follow(url: string, query: string, headers: Record<string, string> = {}): Follower {
  let req: ClientRequest | undefined;
  const follower: Follower = {
    events: [],
    lastId: undefined,
    raw: '',
    opened: Promise.resolve(),
    close: () => req?.destroy(),
  };
  follower.opened = new Promise((resolve, reject) => {
    req = request(`${url}/users/events${query}`, { headers }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`${query}: status ${res.statusCode}`));
      res.setEncoding('utf8');
      const parse = sseEvents((event) => {
        if (event.id !== undefined) follower.lastId = Number(event.id);
        if (event.data === undefined) return;
        const body = JSON.parse(event.data) as { type: string; data: Shown };
        assert.equal(body.type, event.event);
        follower.events.push({ id: Number(event.id), type: body.type, data: body.data });
      });
      res.on('data', (chunk: string) => {
        follower.raw += chunk;
        // Where it starts (the id it resumed after, or the version at connecting) counts as given.
        const start = follower.lastId === undefined ? /^: changes after (\d+)$/m.exec(follower.raw)?.[1] : undefined;
        if (start !== undefined) follower.lastId = Number(start);
        parse(chunk);
      });
      res.on('error', () => undefined);
      resolve();
    });
    req.on('error', reject);
    req.end();
  });
  return follower;
}

/** Waits until `done()` holds, looking every 50 ms, for at most `timeoutMs`; then fails with `what`. */
async function until(done: () => boolean, what: () => string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting: ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Waits until the follower has been given every change up to `version` (by an event or a heartbeat). */
function reached(follower: Follower, version: number, what: string): Promise<void> {
  return until(
    () => (follower.lastId ?? -1) >= version,
    () => `${what}: at ${follower.lastId} of ${version}; it ended with: ${follower.raw.slice(-300)}`,
  );
}

/** What a client knows of the records in its view from its events alone. */
function viewOf(events: readonly Seen[], start: ReadonlyMap<number, string> = new Map()): Map<number, string> {
  const records = new Map(start);
  for (const { type, data } of events) {
    if (type === 'user.deleted' || type === 'user.left') records.delete(data.id);
    else records.set(data.id, JSON.stringify([data.name, data.age, data.city]));
  }
  return records;
}

/** The records `GET /users?{filter}` lists, as viewOf shows them. */
async function listed(url: string, filter: string): Promise<Map<number, string>> {
  const answer = await call(url, 'GET', `/users?${filter}${filter === '' ? '' : '&'}fields=id,name,age,city`);
  assert.equal(answer.status, 200, `${filter}: ${answer.text}`);
  return new Map((answer.json.data as Shown[]).map((r) => [r.id, JSON.stringify([r.name, r.age, r.city])] as const));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A webhook receiver: each delivery verified (standardwebhooks), kept once per webhook-id, by the path it came to. */
async function startReceiver() {
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const verifier = new Webhook(secret);
  const byPath = new Map<string, Seen[]>();
  const seen = new Set<string>();
  const invalid: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      try {
        const event = verifier.verify(body, req.headers as Record<string, string>) as { type: string; data: Shown };
        const id = String(req.headers['webhook-id']);
        const path = req.url ?? '';
        if (!seen.has(`${path} ${id}`)) {
          seen.add(`${path} ${id}`);
          const list = byPath.get(path) ?? [];
          list.push({ id: Number(id.replace('msg_', '')), type: event.type, data: event.data });
          byPath.set(path, list);
        }
        res.writeHead(204).end();
      } catch (error) {
        invalid.push((error as Error).message);
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    secret,
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    byPath,
    invalid,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Filters given to webhooks at the start (each after the `#` of a URL of its own): those that name no moment of the run. */
const HOOK_FILTERS = ['city=Paris', 'age.gt=45&age.lte=99', 'q=ss', 'id.lte=3&city=Rome', 'city=Paris&age.gte=18&q=a'];

/** A write of the script: what it sends, and which record (by its seed or script name) it changes. */
type Write =
  | { op: 'create'; as: string; name: string; age: string; city: string }
  | { op: 'update'; who: string; set: string }
  | { op: 'delete'; who: string };

const SEED: Write[] = [
  { op: 'create', as: 'ada', name: 'Ada', age: '30', city: 'Paris' },
  { op: 'create', as: 'bob', name: 'Bob', age: '12', city: 'Paris' },
  { op: 'create', as: 'anna', name: 'Anna', age: '45', city: 'Rome' },
  { op: 'create', as: 'strauss', name: 'Strauß', age: '70', city: 'Oslo' },
];

/** Writes that take records into views, keep them there, take them out, and delete them. */
const SCRIPT: Write[] = [
  { op: 'create', as: 'cy', name: 'Cy', age: '30', city: 'Paris' },
  { op: 'create', as: 'dan', name: 'Dan', age: '17', city: 'Oslo' },
  { op: 'update', who: 'bob', set: 'age=18' },
  { op: 'update', who: 'ada', set: 'city=Rome' },
  { op: 'update', who: 'ada', set: 'name=Hannah' },
  { op: 'update', who: 'anna', set: 'age=46' },
  { op: 'update', who: 'dan', set: 'name=J%C3%B3hann' },
  { op: 'delete', who: 'bob' },
  { op: 'delete', who: 'dan' },
  { op: 'create', as: 'emile', name: 'ÉMILE STRAUSS', age: '99', city: 'Paris' },
  { op: 'update', who: 'strauss', set: 'city=Paris' },
  { op: 'update', who: 'cy', set: 'age=150' },
  { op: 'update', who: 'cy', set: 'age=017' },
  { op: 'update', who: 'anna', set: 'city=%20Paris%20' },
  { op: 'delete', who: 'strauss' },
  { op: 'update', who: 'emile', set: 'city=Oslo' },
];

/** One filter of each kind the listing takes, and some together (T0: a moment between the seed and the script). */
const FILTERS = (t0: string): string[] => [
  'name=Hannah',
  'city=Paris',
  'city=%20Paris%20',
  'age=030',
  'age.gte=18',
  'age.gt=45&age.lte=99',
  'age.lt=18',
  'id.gt=2',
  'id.lte=3&city=Rome',
  `createdAt.lt=${encodeURIComponent(t0)}`,
  `updatedAt.gte=${encodeURIComponent(t0)}`,
  'q=ann',
  'q=ANN',
  'q=ss',
  'q=au%C3%9F',
  'city=Paris&age.gte=18&q=a',
];

for (const backend of BACKENDS) {
  describe(`filtered event stream (${backend.name})`, { skip: backend.skip }, () => {
    let server: RunningServer;
    let database: Database | undefined;
    const dir = tempDir();
    /** The script's writes as done: the change version each made, the record's id, and the record after (before, for a delete). */
    const done: Array<{ version: number; op: Write['op']; id: number; record: Shown; sets: Map<string, Set<number>> }> =
      [];
    let seedVersion = 0;
    let filters: string[] = [];
    /** Each filter's stream, open before the script. */
    const live = new Map<string, Follower>();
    let unfiltered: Follower;
    let cut: Follower;
    let resumed: Follower;
    /** Each filter's listing before the script. */
    const initial = new Map<string, Map<number, string>>();

    const ids = new Map<string, number>();
    const records = new Map<number, Shown>();
    let version = 0;
    const apply = async (write: Write): Promise<{ id: number; record: Shown }> => {
      const path =
        write.op === 'create'
          ? `/users?name=${encodeURIComponent(write.name)}&age=${write.age}&city=${write.city}&fields=id,name,age,city`
          : write.op === 'update'
            ? `/users/${ids.get(write.who)}?${write.set}&fields=id,name,age,city`
            : `/users/${ids.get(write.who)}`;
      const method = { create: 'POST', update: 'PATCH', delete: 'DELETE' }[write.op];
      const answer = await call(server.url, method, path);
      assert.equal(answer.status, 200, `${method} ${path}: ${answer.text}`);
      version++;
      if (write.op === 'delete') {
        const id = ids.get(write.who) as number;
        const record = records.get(id) as Shown;
        records.delete(id);
        return { id, record };
      }
      const record = answer.json.data[0] as Shown;
      if (write.op === 'create') ids.set(write.as, record.id);
      records.set(record.id, record);
      return { id: record.id, record };
    };
    const matching = async (filter: string) => new Set((await listed(server.url, filter)).keys());

    let receiver: Awaited<ReturnType<typeof startReceiver>>;

    before(async () => {
      if (backend.name === 'postgresql') database = await backend.fresh();
      receiver = await startReceiver();
      server = await startServer({
        DATABASE_URL: database?.url ?? `${dir.dir}/users.db`,
        EVENTS_HEARTBEAT_MS: '1000',
        // The same filters as webhooks, each to a path of its own, and one webhook of every change.
        WEBHOOK_URLS: [`${receiver.base}/all`, ...HOOK_FILTERS.map((f, i) => `${receiver.base}/f${i}#${f}`)].join(','),
        WEBHOOK_SECRET: receiver.secret,
      });
      for (const write of SEED) await apply(write);
      seedVersion = version;
      // A moment after every seed record's times and before every write of the script's.
      await sleep(20);
      const t0 = new Date().toISOString();
      await sleep(20);
      filters = FILTERS(t0);
      for (const filter of filters) {
        initial.set(filter, await listed(server.url, filter));
        live.set(filter, follow(server.url, `?after=${seedVersion}&${filter}`));
      }
      unfiltered = follow(server.url, `?after=${seedVersion}`);
      // A stream cut halfway through the script, resumed with the last id it was given.
      cut = follow(server.url, `?after=${seedVersion}&city=Paris`);
      await Promise.all([...live.values(), unfiltered, cut].map((f) => f.opened));
      // After Dan's deletion, which city=Paris does not see: only a heartbeat gives its id.
      const half = SCRIPT.findIndex((write) => write.op === 'delete' && write.who === 'dan') + 1;
      for (const [i, write] of SCRIPT.entries()) {
        if (i === half) {
          await reached(cut, version, 'the stream to cut');
          cut.close();
        }
        const { id, record } = await apply(write);
        const sets = new Map<string, Set<number>>();
        for (const filter of filters) sets.set(filter, await matching(filter));
        done.push({ version, op: write.op, id, record, sets });
      }
      resumed = follow(server.url, `?city=Paris`, { 'last-event-id': String(cut.lastId) });
      for (const follower of [...live.values(), unfiltered, resumed]) await reached(follower, version, 'a stream');
    });
    after(async () => {
      for (const follower of [...live.values(), unfiltered, resumed]) follower?.close();
      await server?.stop();
      await receiver?.close();
      await database?.drop();
      dir.cleanup();
    });

    /** What a stream with this filter must send for the script: from the listings before and after each write. */
    const expected = (filter: string): Seen[] => {
      const events: Seen[] = [];
      let before = new Set((initial.get(filter) as Map<number, string>).keys());
      for (const write of done) {
        const now = write.sets.get(filter) as Set<number>;
        const type =
          write.op === 'create'
            ? now.has(write.id) && 'user.created'
            : write.op === 'delete'
              ? before.has(write.id) && 'user.deleted'
              : now.has(write.id)
                ? 'user.updated'
                : before.has(write.id) && 'user.left';
        if (type !== false) events.push({ id: write.version, type, data: write.record });
        before = now;
      }
      return events;
    };

    it('each filter kind, live and read back from the log: exactly the changes that the listing says entered, stayed in, left or went', async () => {
      const kinds = new Set<string>();
      // Each filter read back from the log too, all at once.
      const back = filters.map((filter) => follow(server.url, `?after=${seedVersion}&${filter}`));
      try {
        await Promise.all(back.map((follower, i) => reached(follower, version, filters[i] as string)));
        for (const [i, filter] of filters.entries()) {
          const want = expected(filter);
          for (const event of want) kinds.add(event.type);
          assert.deepEqual((live.get(filter) as Follower).events, want, `${filter}: live`);
          assert.deepEqual(back[i]?.events, want, `${filter}: from the log`);
          // A client that listed, then followed from there, holds what the listing holds now.
          assert.deepEqual(viewOf(want, initial.get(filter)), await listed(server.url, filter), filter);
        }
      } finally {
        for (const follower of back) follower.close();
      }
      // The script exercises every kind of event somewhere.
      assert.deepEqual([...kinds].sort(), ['user.created', 'user.deleted', 'user.left', 'user.updated']);
    });

    it("a webhook with a filter after its URL's # is sent what a stream with that filter is, and no other change", async () => {
      const script = (path: string) => (receiver.byPath.get(path) ?? []).filter((event) => event.id > seedVersion);
      // Every change of the script to the webhook of all changes; each filtered one its view's (by
      // count first: one sent more, or other changes, fails the comparison that follows).
      await until(
        () => script('/all').length === done.length,
        () => `/all: ${script('/all').length} of ${done.length}`,
      );
      for (const [i, filter] of HOOK_FILTERS.entries()) {
        const want = expected(filter);
        await until(
          () => script(`/f${i}`).length >= want.length,
          () => `${filter}: ${script(`/f${i}`).length} of ${want.length}`,
        );
        assert.deepEqual(script(`/f${i}`), want, filter);
      }
      assert.deepEqual(
        script('/all').map((event) => [event.id, event.type]),
        done.map((write) => [write.version, `user.${write.op}d`]),
      );
      assert.deepEqual(receiver.invalid, [], 'every delivery verified');
      // The filters see every kind of event between them, user.left included.
      const kinds = new Set(HOOK_FILTERS.flatMap((filter) => expected(filter).map((event) => event.type)));
      assert.ok(kinds.has('user.left') && kinds.has('user.created') && kinds.has('user.deleted'), [...kinds].join());
    });

    it('an unfiltered stream is as before: every change in order, no user.left, no id without an event', () => {
      assert.deepEqual(
        unfiltered.events.map((event) => event.id),
        done.map((write) => write.version),
      );
      assert.ok(!unfiltered.raw.includes('user.left'));
      assert.doesNotMatch(unfiltered.raw, /(^|\n\n)id: \d+\n(?!event: )/);
    });

    it('resumes with Last-Event-ID: from the id a heartbeat gave before a disconnection, and from any event, nothing missed or repeated', async () => {
      const want = expected('city=Paris');
      assert.ok(
        cut.lastId !== undefined && cut.lastId > (cut.events.at(-1)?.id ?? 0),
        'the heartbeat gave an id past the last event',
      );
      assert.deepEqual([...cut.events, ...resumed.events], want);
      // From each event at once (each stream reads its way up from the log).
      const again = want.map((event) => follow(server.url, '?city=Paris', { 'last-event-id': String(event.id) }));
      try {
        await Promise.all(again.map((follower, i) => reached(follower, version, `after event ${want[i]?.id}`)));
        for (const [i, follower] of again.entries()) {
          assert.deepEqual(follower.events, want.slice(i + 1), `after event ${want[i]?.id}`);
        }
      } finally {
        for (const follower of again) follower.close();
      }
    });

    it('catching up through thousands of changes its view does not see, twenty streams at once: each gets the one it sees, the API answers meanwhile', async () => {
      const start = version;
      const batch = JSON.stringify(
        Array.from({ length: 1000 }, (_, i) => ({ name: `hay${i}`, age: '1', city: 'Hay' })),
      );
      for (let n = 0; n < 5; n++) {
        const answer = await call(server.url, 'POST', '/users?fields=id', {
          headers: { 'content-type': 'application/json' },
          body: batch,
        });
        assert.equal(answer.status, 200, answer.text);
        version += 1000;
      }
      const needle = await apply({ op: 'create', as: 'needle', name: 'Needle', age: '5', city: 'Hay' });
      const streams = Array.from({ length: 20 }, () => follow(server.url, `?after=${start}&name=Needle`));
      try {
        // While they page through the log, one page per turn, other requests are served.
        const read = await call(server.url, 'GET', `/users/${needle.id}`);
        assert.equal(read.status, 200, read.text);
        await Promise.all(streams.map((stream, i) => reached(stream, version, `stream ${i}`)));
        for (const stream of streams) {
          assert.deepEqual(stream.events, [{ id: version, type: 'user.created', data: needle.record }]);
        }
      } finally {
        for (const stream of streams) stream.close();
      }
    });
  });
}

/** The filters of the two-process run's subscribers: each kind, and records moving in and out of each. */
const CONCURRENT_FILTERS = [
  'city=Paris',
  'age.gte=50&age.lt=100',
  'city=Rome&age.lt=75',
  'q=an',
  'id.lte=150&city=Oslo',
];
const NAMES = ['Ana', 'Dana', 'Jan', 'Bob', 'Eve', 'Ivan', 'Oskar', 'Li'];
const CITIES = ['Paris', 'Rome', 'Oslo'];

/**
 * `total` writes from `concurrency` clients at once, spread over the servers: creates, updates that
 * move records into and out of the filters, deletes. Answers how many made a change (200).
 */
async function mixedWrites(urls: readonly string[], total: number, concurrency: number): Promise<number> {
  const created: number[] = [];
  let next = 0;
  let changed = 0;
  const pick = <T>(items: readonly T[], n: number) => items[n % items.length] as T;
  const client = async (c: number) => {
    for (let n = next++; n < total; n = next++) {
      const url = urls[(n + c) % urls.length] as string;
      const target = created.length > 10 ? pick(created, n * 7919) : undefined;
      const roll = n % 20;
      const path =
        target === undefined || roll < 9
          ? `/users?name=${pick(NAMES, n)}&age=${(n * 37) % 151}&city=${pick(CITIES, n * 3)}&fields=id`
          : roll < 12
            ? `/users/${target}?city=${pick(CITIES, n)}`
            : roll < 15
              ? `/users/${target}?age=${(n * 53) % 151}`
              : roll < 17
                ? `/users/${target}?name=${pick(NAMES, n * 5)}&city=${pick(CITIES, n * 11)}`
                : `/users/${target}`;
      const method = target === undefined || roll < 9 ? 'POST' : roll < 17 ? 'PATCH' : 'DELETE';
      const answer = await call(url, method, path);
      assert.ok(answer.status === 200 || answer.status === 404, `write ${n}: ${answer.status} ${answer.text}`);
      if (answer.status !== 200) continue;
      changed++;
      if (method === 'POST') created.push(answer.json.data[0].id as number);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, c) => client(c)));
  return changed;
}

for (const backend of BACKENDS) {
  describe(`filtered event streams of two processes on one database (${backend.name})`, { skip: backend.skip }, () => {
    const servers: RunningServer[] = [];
    let database: Database | undefined;
    const dir = tempDir();
    after(async () => {
      await Promise.all(servers.map((server) => server.stop()));
      await database?.drop();
      dir.cleanup();
    });

    it('600 concurrent writes through both: every subscriber on either, of each filter, ends with what the filtered listing holds', async () => {
      if (backend.name === 'postgresql') database = await backend.fresh();
      // Two processes on one database: two instances on PostgreSQL, two on one file with SQLite.
      const url = database?.url ?? `${dir.dir}/users.db`;
      for (let i = 0; i < 2; i++) servers.push(await startServer({ DATABASE_URL: url, EVENTS_HEARTBEAT_MS: '1000' }));
      const urls = servers.map((server) => server.url);
      const subscribers = CONCURRENT_FILTERS.flatMap((filter) =>
        urls.map((at) => ({ filter, at, follower: follow(at, `?after=0&${filter}`) })),
      );
      const followers = subscribers.map((s) => s.follower);
      try {
        await Promise.all(followers.map((follower) => follower.opened));
        // A fresh database: the change version is the number of changes.
        const changed = await mixedWrites(urls, 600, 24);
        await Promise.all(followers.map((follower, i) => reached(follower, changed, `subscriber ${i}`)));
        const kinds = new Set<string>();
        for (const { filter, at, follower } of subscribers) {
          const ids = follower.events.map((event) => event.id);
          assert.ok(
            ids.every((id, i) => i === 0 || id > (ids[i - 1] as number)),
            `${filter} at ${at}: ids rise`,
          );
          for (const event of follower.events) kinds.add(event.type);
          for (const other of urls) {
            assert.deepEqual(
              viewOf(follower.events),
              await listed(other, filter),
              `${filter} at ${at}, listed at ${other}`,
            );
          }
        }
        assert.deepEqual([...kinds].sort(), ['user.created', 'user.deleted', 'user.left', 'user.updated']);
      } finally {
        for (const follower of followers) follower.close();
      }
    });
  });
}

/** Bad input: the filters' faults answer exactly as the listing's do; what only a listing takes is refused with why. */
const BAD: Array<{
  name: string;
  query: string;
  asListing: boolean;
  errors?: Array<{ parameter: string; detail: string }>;
}> = [
  { name: 'a blank value', query: 'city=%20', asListing: true },
  { name: 'a number out of range', query: 'age=151', asListing: true },
  { name: 'a bound that is not a number', query: 'age.gte=x', asListing: true },
  { name: 'a date that does not exist', query: 'createdAt.gt=2026-02-30T00:00:00Z', asListing: true },
  { name: 'a search too long', query: `q=${'a'.repeat(201)}`, asListing: true },
  { name: 'a search with a control character', query: 'q=a%01', asListing: true },
  { name: 'a filter given twice', query: 'name=a&name=b', asListing: true },
  { name: 'a malformed encoding', query: 'city=%E0%A4', asListing: true },
  { name: 'an unknown parameter', query: 'colour=red&city=Paris', asListing: true },
  { name: 'several faults at once', query: 'age=x&updatedAt.lt=2026-13-01T00:00:00Z&colour=red', asListing: true },
  ...(['sort=age', 'limit=3', 'cursor=abc', 'fields=id'] as const).map((query) => {
    const parameter = query.split('=')[0] as keyof typeof LISTING_ONLY;
    return {
      name: `${parameter}, which only a listing takes`,
      query: `city=Paris&${query}`,
      asListing: false,
      errors: [{ parameter, detail: LISTING_ONLY[parameter] }],
    };
  }),
  {
    name: 'an event id that is not one',
    query: 'after=x&city=Paris',
    asListing: false,
    errors: [{ parameter: 'after', detail: `must be ${EVENT_RULES.eventId}` }],
  },
];

describe('filtered event stream: bad parameters', () => {
  let server: RunningServer;
  const dir = tempDir();
  before(async () => {
    server = await startServer({ DATABASE_URL: `${dir.dir}/users.db` });
  });
  after(async () => {
    await server?.stop();
    dir.cleanup();
  });
  for (const { name, query, asListing, errors } of BAD) {
    it(`${name} (${query.slice(0, 40)}): 400, ${asListing ? 'the problem GET /users answers' : 'saying why'}`, async () => {
      const stream = await call(server.url, 'GET', `/users/events?${query}`);
      assert.equal(stream.status, 400, stream.text);
      assert.match(stream.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal(stream.json.type, '/problems/invalid-input');
      if (asListing) {
        const listing = await call(server.url, 'GET', `/users?${query}`);
        assert.equal(listing.status, 400, listing.text);
        assert.deepEqual(stream.json, listing.json);
      } else assert.deepEqual(stream.json.errors, errors);
    });
  }
});

describe("a webhook's filter (WEBHOOK_URLS, after a URL's #)", () => {
  it('gives each URL its view and posts to it without the # part; none for a URL without one', () => {
    const [all, paris, empty] = webhookTargets([
      'https://hooks.example/all',
      'https://hooks.example/paris?token=1#city=Paris&age.gte=18',
      'https://hooks.example/empty#',
    ]);
    assert.equal(empty?.url, 'https://hooks.example/empty');
    assert.deepEqual(all, { url: 'https://hooks.example/all', endpoint: 'https://hooks.example/all', view: undefined });
    assert.equal(paris?.endpoint, 'https://hooks.example/paris?token=1');
    assert.equal(paris?.url, 'https://hooks.example/paris?token=1#city=Paris&age.gte=18');
    assert.ok(paris?.view instanceof ChangeView);
    assert.equal(empty?.view, undefined);
  });

  it('refuses a second #, and the same receiver twice with the same filter however it is spelled', () => {
    const refused = (urls: string[]) => {
      try {
        webhookTargets(urls);
      } catch (error) {
        assert.ok(error instanceof ConfigError);
        return error.message;
      }
      return assert.fail(`accepted: ${urls.join(',')}`);
    };
    assert.match(refused(['https://a.example/#city=Paris#age=3']), /URL 1 \(#city=Paris#age=3\): holds a second #/);
    assert.match(refused(['https://a.example/h', 'https://a.example/h#']), /URL 2 is URL 1 again/);
    assert.match(
      refused(['https://a.example/h#city=Paris', 'https://a.example/h#city=%50aris']),
      /URL 2 is URL 1 again, with the same filter/,
    );
    // Another filter, or another receiver, is another webhook.
    assert.equal(webhookTargets(['https://a.example/h#city=Paris', 'https://a.example/h#city=Rome']).length, 2);
    assert.equal(webhookTargets(['https://a.example/h', 'https://a.example/i']).length, 2);
    assert.equal(
      webhookTargets(['https://a.example/h#'])[0]?.url,
      'https://a.example/h',
      'no filter: no # in its name',
    );
  });

  it("refuses, by the event stream's rules, every bad filter at once, naming its URL", () => {
    assert.throws(
      () =>
        webhookTargets([
          'https://a.example/#age.gte=old',
          'https://b.example/#sort=name',
          'https://c.example/#colour=red',
          'https://d.example/#createdAt.lt=2026-02-30T00:00:00Z',
        ]),
      (error: Error) => {
        assert.ok(error instanceof ConfigError);
        assert.match(
          error.message,
          /WEBHOOK_URLS: the filter of URL 1 \(#age\.gte=old\): age\.gte must be a whole number/,
        );
        assert.ok(!error.message.includes('example'), 'a URL may hold a secret path: never shown');
        assert.ok(error.message.includes(`URL 2 (#sort=name): sort ${LISTING_ONLY.sort}`), error.message);
        assert.match(error.message, /URL 3 \(#colour=red\): colour is not a known parameter/);
        assert.match(
          error.message,
          /URL 4 \(#createdAt\.lt=2026-02-30T00:00:00Z\): createdAt\.lt must be a date and time that exists/,
        );
        return true;
      },
    );
  });

  it('stops the service from starting (exit 2, the reason in one line)', async () => {
    const dir = tempDir();
    try {
      const { code, stderr } = await runCli(['serve'], {
        env: {
          DATABASE_URL: `${dir.dir}/users.db`,
          PORT: '0',
          WEBHOOK_URLS: 'http://127.0.0.1:9/hook#age=x',
          WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
        },
        timeoutMs: 30_000,
      });
      assert.equal(code, 2, stderr);
      assert.match(
        stderr,
        /^user-records: invalid settings:\n {2}- WEBHOOK_URLS: the filter of URL 1 \(#age=x\): age must be a whole number/,
      );
    } finally {
      dir.cleanup();
    }
  });
});

describe('a view of the changes (view.ts)', () => {
  const at = new Date('2026-11-23T10:00:00.000Z');
  const user = (city: string, age: number): User => ({
    id: 7,
    name: 'Ada',
    age,
    city,
    createdAt: at,
    updatedAt: at,
    version: 2,
  });
  const view = new ChangeView({ city: 'Paris' } satisfies ListFilter);
  const cases: Array<{ name: string; change: Omit<Change, 'version' | 'at'>; type: string | undefined }> = [
    { name: 'a creation that matches', change: { kind: 'created', user: user('Paris', 1) }, type: 'user.created' },
    { name: 'a creation that does not', change: { kind: 'created', user: user('Rome', 1) }, type: undefined },
    {
      name: 'an update that stays in',
      change: { kind: 'updated', user: user('Paris', 2), before: user('Paris', 1) },
      type: 'user.updated',
    },
    {
      name: 'an update that comes in',
      change: { kind: 'updated', user: user('Paris', 2), before: user('Rome', 1) },
      type: 'user.updated',
    },
    {
      name: 'an update that leaves',
      change: { kind: 'updated', user: user('Rome', 2), before: user('Paris', 1) },
      type: 'user.left',
    },
    {
      name: 'an update that stays out',
      change: { kind: 'updated', user: user('Rome', 2), before: user('Oslo', 1) },
      type: undefined,
    },
    {
      name: 'an update logged without its before-state, that matches',
      change: { kind: 'updated', user: user('Paris', 2) },
      type: 'user.updated',
    },
    {
      name: 'an update logged without its before-state, that does not match: said to leave',
      change: { kind: 'updated', user: user('Rome', 2) },
      type: 'user.left',
    },
    {
      name: 'a deletion of a matching record',
      change: { kind: 'deleted', user: user('Paris', 1) },
      type: 'user.deleted',
    },
    { name: 'a deletion of another', change: { kind: 'deleted', user: user('Rome', 1) }, type: undefined },
  ];
  for (const { name, change, type } of cases) {
    it(name, () => assert.equal(view.typeOf({ ...change, version: 1, at }), type));
  }
});
