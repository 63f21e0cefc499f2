import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openBetterSqlite } from '../../src/store/sqlite/native-objects.ts';
import fc from 'fast-check';
import { parseDatabaseUrl } from '../../src/config/load.ts';
import { type Dialect, listQuery } from '../../src/store/list-sql.ts';
import { openDatabase } from '../../src/store/database.ts';
import { openSqliteStore } from '../../src/store/sqlite/store.ts';
import {
  fold,
  type ListFilter,
  type ListOrder,
  RANGE_FIELDS,
  RANGE_OPS,
  type Range,
  SORT_FIELDS,
  type SortKey,
  sortValue,
  type User,
  type UserStore,
} from '../../src/store/store.ts';
import { appForSuite } from '../helpers/app.ts';
import { BACKENDS, type Database } from '../helpers/backends.ts';
import { tempDir } from '../helpers/server.ts';

// Sort, ranges, search and counts of the store, checked against a plain model of the same records
// on each backend: a table of queries, random queries (fast-check) paged to the end, and paging
// while writers insert and delete.

/** Text order by Unicode code point: UTF-8 bytes compare in that order. */
function compareText(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

function compareBy(sort: readonly SortKey[]) {
  return (a: User, b: User): number => {
    for (const key of sort) {
      const x = sortValue(a, key.field);
      const y = sortValue(b, key.field);
      const order = typeof x === 'string' ? compareText(x, String(y)) : x - Number(y);
      if (order !== 0) return key.descending ? -order : order;
    }
    return a.id - b.id;
  };
}

function inRange(user: User, range: Range): boolean {
  const value = Number(sortValue(user, range.field));
  switch (range.op) {
    case 'gt':
      return value > range.value;
    case 'gte':
      return value >= range.value;
    case 'lt':
      return value < range.value;
    case 'lte':
      return value <= range.value;
  }
}

/** What the store must answer, computed from the records alone. */
function model(users: readonly User[], filter: ListFilter, order?: ListOrder): User[] {
  const search = filter.search === undefined ? undefined : fold(filter.search);
  const sort = order?.sort ?? [{ field: 'id' as const, descending: false }];
  const compare = compareBy(sort);
  let rows = users.filter(
    (user) =>
      (filter.name === undefined || user.name === filter.name) &&
      (filter.age === undefined || user.age === filter.age) &&
      (filter.city === undefined || user.city === filter.city) &&
      (filter.ranges ?? []).every((range) => inRange(user, range)) &&
      (search === undefined || fold(user.name).includes(search) || fold(user.city).includes(search)) &&
      (filter.afterId === undefined || user.id > filter.afterId),
  );
  rows = rows.sort(compare);
  const start = order?.after;
  if (start !== undefined) {
    const marker = { ...rows[0], id: start.id } as User;
    sort.forEach((key, i) => {
      const value = start.values[i];
      (marker as unknown as Record<string, unknown>)[key.field] =
        key.field === 'createdAt' || key.field === 'updatedAt' ? new Date(Number(value)) : value;
    });
    rows = rows.filter((user) => compare(user, marker) > 0);
  }
  return filter.limit === undefined ? rows : rows.slice(0, filter.limit);
}

/** Every page of a sorted listing, each started after the last record of the one before. */
async function allPages(store: UserStore, filter: ListFilter, sort: readonly SortKey[], limit: number) {
  const pages: User[][] = [];
  let after: ListOrder['after'];
  for (let guard = 0; guard < 1000; guard++) {
    const page = await store.list({ ...filter, limit }, { sort, after });
    pages.push(page);
    if (page.length < limit) break;
    const last = page.at(-1) as User;
    after = { values: sort.map((key) => sortValue(last, key.field)), id: last.id };
  }
  return pages;
}

const PEOPLE: Array<[string, number, string]> = [
  ['Émile', 36, 'Paris'],
  ['émile', 36, 'paris'],
  ['ÉMILE', 41, 'Lyon'],
  ['Straße', 41, 'München'],
  ['STRASSE', 20, 'MÜNCHEN'],
  ['σοφία', 20, 'Αθήνα'],
  ['ΣΟΦΊΑ', 36, 'αθήνα'],
  ['Ada', 36, 'London'],
  ['Ada', 150, 'London'],
  ['ada', 0, 'london'],
  ['Zoë 🌍', 7, 'Zürich'],
  ['100% Bob', 7, 'Oslo'],
  ['ab_c', 99, 'O"slo'],
  ['Ünal', 64, 'İzmir'],
  ['Ärger', 64, 'Åre'],
  ['李小龙', 32, '香港'],
  ['Zed', 32, 'Zagreb'],
  ['Bee', 120, 'Bern'],
  ['Κασσάνδρα', 28, 'Σάμος'],
  ['Işık', 45, 'Kırıkkale'],
];

for (const backend of BACKENDS) {
  describe(`queries [${backend.name}]`, { skip: backend.skip, timeout: 300_000 }, () => {
    let database: Database;
    let store: UserStore;
    let users: User[] = [];

    before(async () => {
      database = await backend.fresh();
      const config = parseDatabaseUrl(database.url);
      if (typeof config === 'string') throw new Error(config);
      store = await openDatabase({ database: config, databaseTimeoutMs: 10_000, databasePoolSize: 4 }).openStore();
      // In a few bursts a few ms apart, so that creation times repeat and differ.
      for (let i = 0; i < PEOPLE.length; i += 5) {
        const batch = PEOPLE.slice(i, i + 5).map(([name, age, city]) => store.create({ name, age, city }));
        users.push(...(await Promise.all(batch)));
        await new Promise((resolve) => setTimeout(resolve, 3));
      }
      // Some records changed, so that updatedAt differs from createdAt.
      for (const user of users.filter((_, i) => i % 4 === 1)) {
        const changed = await store.update(user.id, { age: (user.age + 1) % 151 });
        assert.ok(changed.ok);
        users = users.map((each) => (each.id === user.id ? changed.user : each));
      }
    });
    after(async () => {
      await store?.close();
      await database?.drop();
    });

    const times = () => users.map((user) => user.createdAt.getTime()).sort((a, b) => a - b);
    const rows: Array<{ name: string; filter: () => ListFilter; sort?: SortKey[] }> = [
      { name: 'creation order', filter: () => ({}) },
      { name: 'sort by name', filter: () => ({}), sort: [{ field: 'name', descending: false }] },
      { name: 'sort by -name', filter: () => ({}), sort: [{ field: 'name', descending: true }] },
      { name: 'sort by age, ties by id', filter: () => ({}), sort: [{ field: 'age', descending: false }] },
      { name: 'sort by -age, ties by id ascending', filter: () => ({}), sort: [{ field: 'age', descending: true }] },
      {
        name: 'sort by age, -name',
        filter: () => ({}),
        sort: [
          { field: 'age', descending: false },
          { field: 'name', descending: true },
        ],
      },
      { name: 'sort by -city', filter: () => ({}), sort: [{ field: 'city', descending: true }] },
      { name: 'sort by -createdAt', filter: () => ({}), sort: [{ field: 'createdAt', descending: true }] },
      { name: 'sort by updatedAt', filter: () => ({}), sort: [{ field: 'updatedAt', descending: false }] },
      { name: 'sort by -id', filter: () => ({}), sort: [{ field: 'id', descending: true }] },
      {
        name: 'age range',
        filter: () => ({
          ranges: [
            { field: 'age', op: 'gte', value: 20 },
            { field: 'age', op: 'lt', value: 64 },
          ],
        }),
      },
      { name: 'id range', filter: () => ({ ranges: [{ field: 'id', op: 'gt', value: users[3]?.id ?? 0 }] }) },
      {
        name: 'createdAt range',
        filter: () => ({ ranges: [{ field: 'createdAt', op: 'gt', value: times()[5] ?? 0 }] }),
        sort: [{ field: 'createdAt', descending: true }],
      },
      { name: 'search folds case: émile', filter: () => ({ search: 'émile' }) },
      { name: 'search folds ß and SS', filter: () => ({ search: 'strasse' }) },
      { name: 'search folds σ, ς and Σ', filter: () => ({ search: 'ΣΟΦ' }) },
      { name: 'search in the city', filter: () => ({ search: 'münch' }) },
      { name: 'search of two characters', filter: () => ({ search: 'DA' }) },
      { name: 'search of one character', filter: () => ({ search: 'z' }) },
      { name: 'search for % and _ taken literally', filter: () => ({ search: '0%' }) },
      { name: 'search for _', filter: () => ({ search: 'b_c' }) },
      { name: 'search for a quote', filter: () => ({ search: 'o"s' }) },
      { name: 'search for an emoji', filter: () => ({ search: '🌍' }) },
      { name: 'search with no match', filter: () => ({ search: 'nobody here' }) },
      {
        name: 'search, range and exact filter together, sorted',
        filter: () => ({ search: 'a', city: 'London', ranges: [{ field: 'age', op: 'lte', value: 36 }] }),
        sort: [{ field: 'age', descending: true }],
      },
    ];
    for (const row of rows) {
      it(`${row.name}: every page and the count agree with the model`, async () => {
        const filter = row.filter();
        const expected = model(users, filter, row.sort === undefined ? undefined : { sort: row.sort });
        assert.deepEqual(await store.count(filter), expected.length);
        const whole = await store.list(filter, row.sort === undefined ? undefined : { sort: row.sort });
        assert.deepEqual(
          whole.map((user) => user.id),
          expected.map((user) => user.id),
        );
        const sort = row.sort ?? [{ field: 'id', descending: false }];
        for (const limit of [1, 2, 5]) {
          const pages = await allPages(store, filter, sort, limit);
          assert.deepEqual(
            pages.flat().map((user) => user.id),
            expected.map((user) => user.id),
            `pages of ${limit}`,
          );
        }
      });
    }

    it('search finds a word cut after a σ, and keeps ı apart from i', async () => {
      const names = async (search: string) => (await store.list({ search })).map((user) => user.name).sort();
      for (const text of ['Κασ', 'κασσ', 'ΑΣΣ', 'κασσάνδρα']) assert.deepEqual(await names(text), ['Κασσάνδρα'], text);
      assert.deepEqual(await names('ΣΆΜΟΣ'), ['Κασσάνδρα'], 'a final Σ');
      assert.deepEqual(await names('ı'), ['Işık'], 'ı is not an i');
      assert.deepEqual(await names('ırık'), ['Işık']);
      assert.deepEqual(await names('işi'), [], 'nor is i an ı');
    });

    it('random queries, paged to the end, agree with the model (fast-check)', async () => {
      const sortKey = fc.record({ field: fc.constantFrom(...SORT_FIELDS), descending: fc.boolean() });
      const range = fc.record({
        field: fc.constantFrom(...RANGE_FIELDS),
        op: fc.constantFrom(...RANGE_OPS),
        pick: fc.nat(),
      });
      const query = fc.record({
        sort: fc.uniqueArray(sortKey, { minLength: 1, maxLength: 3, selector: (key) => key.field }),
        ranges: fc.array(range, { maxLength: 2 }),
        search: fc.option(fc.nat(), { nil: undefined }),
        searchLength: fc.integer({ min: 1, max: 4 }),
        limit: fc.integer({ min: 1, max: 7 }),
      });
      await fc.assert(
        fc.asyncProperty(query, async (q) => {
          const ranges: Range[] = q.ranges.map(({ field, op, pick }) => {
            const user = users[pick % users.length] as User;
            return { field, op, value: Number(sortValue(user, field)) };
          });
          let search: string | undefined;
          if (q.search !== undefined) {
            const user = users[q.search % users.length] as User;
            const text = [...(q.search % 2 === 0 ? user.name : user.city)];
            const from = q.search % Math.max(1, text.length - q.searchLength + 1);
            search = text.slice(from, from + q.searchLength).join('');
          }
          const filter: ListFilter = { ranges, search };
          const expected = model(users, filter, { sort: q.sort });
          assert.deepEqual(await store.count(filter), expected.length);
          const pages = await allPages(store, filter, q.sort, q.limit);
          assert.deepEqual(
            pages.flat().map((user) => user.id),
            expected.map((user) => user.id),
          );
        }),
        { numRuns: backend.name === 'sqlite' ? 120 : 60, seed: Number(process.env.QUERY_SEED ?? Date.now() % 1e9) },
      );
    });

    it('paging a sorted listing while writers insert and delete returns each surviving record once', async () => {
      const sort: SortKey[] = [{ field: 'name', descending: false }];
      const before = new Set((await store.list({})).map((user) => user.id));
      const removed = new Set<number>();
      const seen: number[] = [];
      let after: ListOrder['after'];
      let round = 0;
      for (;;) {
        const page = await store.list({ limit: 3 }, { sort, after });
        seen.push(...page.map((user) => user.id));
        // Between pages: a new record (before or after the position) and a deleted one.
        const name = round % 2 === 0 ? `AAA${round}` : `zzz${round}`;
        await store.create({ name, age: round, city: 'Churn' });
        const victim = [...before].find((id) => !removed.has(id) && id % 3 === round % 3);
        if (victim !== undefined && (await store.remove(victim)).ok) removed.add(victim);
        round++;
        if (page.length < 3) break;
        const last = page.at(-1) as User;
        after = { values: [last.name], id: last.id };
      }
      assert.equal(new Set(seen).size, seen.length, 'a record came twice');
      for (const id of before) {
        if (!removed.has(id)) assert.ok(seen.includes(id), `surviving record ${id} was skipped`);
      }
    });
  });
}

// A search with many matches is read in the sort's order, one with few by the trigram index (SQLite
// switches at 4000): both ways, and the id order that walks the index itself, against the model.
for (const backend of BACKENDS) {
  describe(`queries over many matches [${backend.name}]`, { skip: backend.skip, timeout: 300_000 }, () => {
    let database: Database;
    let store: UserStore;
    const users: User[] = [];
    const CITIES = ['Lyon', 'Paris', 'Oslo', 'Åre', 'München'];

    before(async () => {
      database = await backend.fresh();
      const config = parseDatabaseUrl(database.url);
      if (typeof config === 'string') throw new Error(config);
      store = await openDatabase({ database: config, databaseTimeoutMs: 30_000, databasePoolSize: 4 }).openStore();
      for (let i = 0; i < 5000; i += 500) {
        const batch = Array.from({ length: 500 }, (_, j) => {
          const n = i + j;
          return store.create({ name: `Person ${(n * 7919) % 5000}`, age: n % 151, city: CITIES[n % 5] as string });
        });
        users.push(...(await Promise.all(batch)));
      }
    });
    after(async () => {
      await store?.close();
      await database?.drop();
    });

    const sorts: SortKey[][] = [
      [],
      [{ field: 'id', descending: true }],
      [{ field: 'name', descending: false }],
      [{ field: 'name', descending: true }],
      [{ field: 'age', descending: true }],
      [{ field: 'city', descending: true }],
      [{ field: 'createdAt', descending: true }],
      [
        { field: 'age', descending: false },
        { field: 'name', descending: true },
      ],
    ];
    const filters: ListFilter[] = [
      { search: 'PERSON' },
      { search: 'lyon' },
      { search: 'son 12' },
      { search: '12' },
      { search: 'person', city: 'Oslo', ranges: [{ field: 'age', op: 'gte', value: 100 }] },
      { search: 'person', afterId: 4000 },
    ];
    for (const filter of filters) {
      it(`search ${JSON.stringify(filter)}: three pages of 50 in each order and the count agree with the model`, async () => {
        // A count is of every match: the page's position (afterId) is not counted.
        assert.equal(await store.count(filter), model(users, { ...filter, afterId: undefined }).length);
        for (const sort of sorts) {
          const order = sort.length === 0 ? undefined : { sort };
          const expected = model(users, filter, order).slice(0, 150);
          const pages = filter.afterId === undefined && sort.length > 0 ? await allPages(store, filter, sort, 50) : [];
          const got =
            sort.length === 0 || filter.afterId !== undefined
              ? await store.list({ ...filter, limit: 150 }, order)
              : pages.flat().slice(0, 150);
          assert.deepEqual(
            got.map((user) => user.id),
            expected.map((user) => user.id),
            `sorted by ${JSON.stringify(sort)}`,
          );
        }
      });
    }
  });
}

describe('queries over HTTP: parameters, cursors, counts', () => {
  const suite = appForSuite();
  const get = (url: string, headers: Record<string, string> = {}) =>
    suite.current.app.inject({ method: 'GET', url, headers });

  before(async () => {
    for (const [name, age, city] of PEOPLE) {
      const query = new URLSearchParams({ name, age: String(age), city });
      assert.equal((await suite.current.app.inject({ method: 'POST', url: `/users?${query}` })).statusCode, 200);
    }
  });

  it('a sorted listing pages through Link cursors to the end, each record once, in order', async () => {
    const whole = (await get('/users?sort=-age,name&fields=id,name,age')).json().data as Array<{ id: number }>;
    assert.equal(whole.length, PEOPLE.length);
    const seen: number[] = [];
    let url: string | undefined = '/users?sort=-age,name&fields=id,name,age&limit=4';
    while (url !== undefined) {
      const answer = await get(url);
      assert.equal(answer.statusCode, 200, answer.body);
      seen.push(...answer.json().data.map((record: { id: number }) => record.id));
      const link = answer.headers.link as string | undefined;
      url = link === undefined ? undefined : /^<([^>]+)>; rel="next"$/.exec(link)?.[1];
      if (url !== undefined) assert.match(url, /[?&]cursor=[A-Za-z0-9_-]+$/);
    }
    assert.deepEqual(
      seen,
      whole.map((record) => record.id),
    );
  });

  it('Prefer: count=exact gives X-Total-Count of every match, whatever the page', async () => {
    const answer = await get('/users?q=ada&limit=1', { prefer: 'return=minimal, count=exact' });
    assert.equal(answer.headers['x-total-count'], '3');
    assert.equal(answer.headers['preference-applied'], 'count=exact');
    assert.equal(answer.json().data.length, 1);
    const plain = await get('/users', { prefer: 'count=exact' });
    assert.equal(plain.headers['x-total-count'], String(PEOPLE.length));
    assert.equal((await get('/users?q=ada')).headers['x-total-count'], undefined, 'only when asked');
  });

  it('Prefer: count = exact and count="exact" are the same preference; listings vary on Prefer', async () => {
    for (const prefer of ['count = exact', 'count="exact"', 'respond-async, COUNT=EXACT; x=y']) {
      const answer = await get('/users?q=ada', { prefer });
      assert.equal(answer.headers['x-total-count'], '3', prefer);
    }
    assert.equal((await get('/users?q=ada', { prefer: 'count=estimated' })).headers['x-total-count'], undefined);
    for (const url of ['/users', '/users?q=ada', '/users?q=ada&limit=1']) {
      const vary = String((await get(url)).headers.vary ?? '');
      assert.ok(vary.split(/\s*,\s*/).includes('Prefer'), `${url}: Vary ${vary}`);
    }
  });

  it('a time bound finer than a ms keeps exactly the records it names', async () => {
    const [record] = (await get('/users?limit=1&fields=id,createdAt')).json().data;
    const at = new Date(record.createdAt as string).getTime();
    const iso = (ms: number, extra: string) => new Date(ms).toISOString().replace('Z', `${extra}Z`);
    const ids = async (query: string) =>
      (await get(`/users?${query}&fields=id`)).json().data.map((user: { id: number }) => user.id);
    // The record's time plus 0.9 µs: after it, and before the next ms.
    const justAfter = iso(at, '0009');
    assert.ok(!(await ids(`createdAt.gte=${justAfter}`)).includes(record.id), 'gte a bound after it');
    assert.ok((await ids(`createdAt.lt=${justAfter}`)).includes(record.id), 'lt a bound after it');
    assert.ok((await ids(`createdAt.lte=${justAfter}`)).includes(record.id), 'lte a bound after it');
    assert.ok(!(await ids(`createdAt.gt=${justAfter}`)).includes(record.id), 'gt a bound after it');
    const exact = iso(at, '');
    assert.ok((await ids(`createdAt.gte=${exact}`)).includes(record.id));
    assert.ok(!(await ids(`createdAt.gt=${exact}`)).includes(record.id));
  });

  it('ranges, search and sort work with fields, and the ETag with If-None-Match', async () => {
    const url = '/users?age.gte=20&age.lt=64&q=a&sort=city&fields=name,city';
    const first = await get(url);
    assert.equal(first.statusCode, 200);
    const etag = first.headers.etag as string;
    assert.ok(etag.length > 0);
    assert.equal((await get(url, { 'if-none-match': etag })).statusCode, 304);
    for (const record of first.json().data) assert.deepEqual(Object.keys(record), ['name', 'city']);
  });

  const faults: Array<[string, string, string]> = [
    ['/users?sort=age,age', 'sort', 'field twice'],
    ['/users?sort=height', 'sort', 'unknown field'],
    ['/users?sort=age&after=3', 'after', 'after with a sort'],
    ['/users?cursor=eyJ4IjoxfQ', 'cursor', 'a cursor without its sort'],
    ['/users?sort=age&cursor=eyJzIjoibmFtZSIsInYiOlsiQSJdLCJpIjoxfQ', 'cursor', "another sort's cursor"],
    ['/users?sort=age&cursor=not!base64', 'cursor', 'a cursor that is not one'],
    ['/users?createdAt.gt=2026-02-30T00:00:00Z', 'createdAt.gt', 'a date that does not exist'],
    ['/users?updatedAt.lt=yesterday', 'updatedAt.lt', 'not a date'],
    ['/users?age.gt=151', 'age.gt', 'an age out of range'],
    ['/users?id.lte=-1', 'id.lte', 'a negative id'],
    ['/users?q=', 'q', 'an empty search'],
    [`/users?q=${'a'.repeat(201)}`, 'q', 'a search over 200 characters'],
    ['/users?q=a%07b', 'q', 'a control character'],
    ['/users?age.between=1', 'age.between', 'an unknown bound'],
  ];
  for (const [url, parameter, what] of faults) {
    it(`${what} answers 400 naming ${parameter}`, async () => {
      const answer = await get(url);
      assert.equal(answer.statusCode, 400, answer.body);
      const problem = answer.json();
      assert.equal(problem.type, '/problems/invalid-input');
      assert.ok(
        problem.errors.some((error: { parameter: string }) => error.parameter === parameter),
        answer.body,
      );
    });
  }
});

// Cursors are opaque but readable: one made by hand must get a 400, never a 500 or an arbitrary page.
for (const backend of BACKENDS) {
  describe(`forged cursors [${backend.name}]`, { skip: backend.skip }, () => {
    const suite = appForSuite({}, backend);
    const cursor = (position: unknown) => Buffer.from(JSON.stringify(position)).toString('base64url');
    const forged: Array<[string, string, unknown]> = [
      ['a fraction for an id', 'id', { s: 'id', v: [1.5], i: 1 }],
      ['an id past 2^53', '-id', { s: '-id', v: [18446744073709551616], i: 1 }],
      ['a huge time', 'createdAt', { s: 'createdAt', v: [1e308], i: 1 }],
      ['a negative time', '-updatedAt', { s: '-updatedAt', v: [-1e308], i: 1 }],
      ['an age out of range', 'age', { s: 'age', v: [151], i: 1 }],
      ['a number for a name', 'name', { s: 'name', v: [5], i: 1 }],
      ['an object for a city', 'city', { s: 'city', v: [{ a: 1 }], i: 1 }],
      ['a NUL in a name', 'name', { s: 'name', v: ['\u0000'], i: 1 }],
      ['a NUL in a later key', '-age,name', { s: '-age,name', v: [30, 'a\u0000'], i: 1 }],
      ['a lone surrogate in a city', 'city', { s: 'city', v: ['\ud800'], i: 1 }],
      ['an id of 0', 'age', { s: 'age', v: [5], i: 0 }],
      ['a key more', 'age', { s: 'age', v: [5], i: 1, x: 1 }],
      ['an array', 'age', [1, 2]],
      ['null', 'age', null],
    ];
    for (const [what, sort, position] of forged) {
      it(`${what}: 400 naming cursor`, async () => {
        const answer = await suite.current.app.inject({
          method: 'GET',
          url: `/users?sort=${sort}&limit=2&cursor=${cursor(position)}`,
        });
        assert.equal(answer.statusCode, 400, answer.body);
        assert.deepEqual(
          answer.json().errors.map((error: { parameter: string }) => error.parameter),
          ['cursor'],
        );
      });
    }

    it('the cursors the service makes still work on every sort', async () => {
      for (let i = 0; i < 3; i++) {
        const query = new URLSearchParams({ name: `N${i}`, age: String(i), city: `C${i}` });
        assert.equal((await suite.current.app.inject({ method: 'POST', url: `/users?${query}` })).statusCode, 200);
      }
      for (const sort of ['id', '-id', 'name', '-age', 'city', 'createdAt', '-updatedAt', 'age,-name,city']) {
        const first = await suite.current.app.inject({ method: 'GET', url: `/users?sort=${sort}&limit=2&fields=id` });
        const next = /<([^>]+)>; rel="next"/.exec(String(first.headers.link))?.[1];
        assert.ok(next, `${sort}: no next link`);
        const second = await suite.current.app.inject({ method: 'GET', url: next });
        assert.equal(second.statusCode, 200, `${sort}: ${second.body}`);
        assert.equal(second.json().data.length, 1, sort);
      }
    });
  });
}

// A sorted listing without limit streams a page at a time through these cursors; each page must start
// where it begins in the first key's index, or every page reads all the records before it again.
describe('a cursor page of several keys starts in the index of the first key [sqlite]', () => {
  const dialect: Dialect = { param: () => '?', time: (ms) => ms, byCodePoint: (column) => column, search: () => '1' };
  const fields = ['id', 'name', 'age', 'city', 'createdAt', 'updatedAt'] as const;
  it('for every pair of fields, ascending and descending', async () => {
    const scratch = tempDir('user-records-plan-');
    try {
      const file = `${scratch.dir}/users.db`;
      await (await openSqliteStore(file)).close();
      const db = openBetterSqlite(file, { readonly: true });
      try {
        for (const first of fields) {
          for (const second of fields.filter((field) => field !== first)) {
            for (const descending of [false, true]) {
              const sort: SortKey[] = [
                { field: first, descending },
                { field: second, descending: !descending },
              ];
              const value = (field: string) => (field === 'name' || field === 'city' ? 'm' : 5);
              const after = { values: sort.map((key) => value(key.field)), id: 5 };
              const { text, values } = listQuery({ limit: 1000 }, { sort, after }, dialect, '*');
              const plan = (db.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...values) as Array<{ detail: string }>)
                .map((row) => row.detail)
                .join(' | ');
              assert.match(plan, /^SEARCH users USING (INTEGER PRIMARY KEY|INDEX)/, `${JSON.stringify(sort)}: ${plan}`);
            }
          }
        }
        // A page of an age range in creation order walks the ids rather than sorting every match.
        const ages = {
          limit: 50,
          ranges: [
            { field: 'age' as const, op: 'gte' as const, value: 20 },
            { field: 'age' as const, op: 'lt' as const, value: 30 },
          ],
        };
        const byId = { ...dialect, ageInIdOrder: (column: string) => `+${column}` };
        const { text, values } = listQuery(ages, undefined, byId, '*');
        const plan = (db.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...values) as Array<{ detail: string }>)
          .map((row) => row.detail)
          .join(' | ');
        assert.doesNotMatch(plan, /TEMP B-TREE/, plan);
      } finally {
        db.close();
      }
    } finally {
      scratch.cleanup();
    }
  });
});
