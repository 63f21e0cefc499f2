import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GROUP_FIELDS, type GroupField } from '../../src/record/fields.ts';
import { meanText } from '../../src/users/stats-present.ts';
import { appForSuite } from '../helpers/app.ts';
import { BACKENDS } from '../helpers/backends.ts';
import { call } from '../helpers/http.ts';
import { runScenarios, type Scenario } from '../helpers/scenario.ts';

// GET /users/stats on each backend: every group of every query checked against the listing of the
// same query, grouped by hand here; bad input answered as the listing answers it; the route beside
// /users/:id; HEAD and If-None-Match.

const CITIES = ['Paris', 'paris', 'Zürich', 'Åre', '香港', 'Berlin', 'Oslo'];
const NAMES = ['Ada', 'Émile', 'Straße', 'Zoë', 'Bob'];

/** Record i of the suite: counts per city that differ and tie, ages from 0 to 150. */
function record(i: number) {
  return {
    name: `${NAMES[i % NAMES.length]} ${i}`,
    age: (i * 37) % 151,
    city: CITIES[(i * i) % CITIES.length] as string,
  };
}
/** 120 records of 120 distinct ages (37 and 151 share no factor): more groups than the default cap. */
const RECORDS = Array.from({ length: 120 }, (_, i) => record(i));

/** The queries each group is checked under: filters, ranges and search as the listing takes them. */
const QUERIES = [
  '',
  'city=Paris',
  'city=%20Paris%20',
  'age=74',
  'age.gte=30',
  'age.gte=20&age.lt=100',
  'id.gt=10&id.lte=40',
  'q=par',
  'q=a',
  'q=%C3%A9mile',
  'name=Bob%2014',
  'q=zzzz',
  'age.gt=150',
  'createdAt.gte=2000-01-01T00:00:00Z',
];

interface Listed {
  age: string;
  city: string;
}

/** Text by Unicode code point, as the service compares it. */
const byCodePoint = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** The mean to two places, half up, by decimal arithmetic on the digits (not the service's code). */
function expectedMean(sum: number, count: number): string {
  const whole = Math.floor(sum / count);
  const rest = sum - whole * count;
  // Thousandths decide the rounding of hundredths.
  const thousandths = Math.floor((rest * 1000) / count);
  const hundredths = Math.floor(thousandths / 10) + (thousandths % 10 >= 5 ? 1 : 0);
  return hundredths === 100 ? `${whole + 1}.00` : `${whole}.${String(hundredths).padStart(2, '0')}`;
}

/** What GET /users/stats must answer for these listed records, grouped by `group`. */
function grouped(records: readonly Listed[], group: GroupField | undefined): Array<Record<string, string | number>> {
  const groups = new Map<string, number[]>();
  for (const user of records) {
    const key = group === undefined ? '' : user[group];
    groups.set(key, [...(groups.get(key) ?? []), Number(user.age)]);
  }
  if (group === undefined && records.length === 0) return [{ count: 0 }];
  const rows = [...groups].map(([value, ages]) => {
    const sum = ages.reduce((a, b) => a + b, 0);
    const row = {
      ...(group === undefined ? {} : { [group]: value }),
      count: ages.length,
      minAge: String(Math.min(...ages)),
      maxAge: String(Math.max(...ages)),
      meanAge: expectedMean(sum, ages.length),
    };
    return { value, row };
  });
  const valueOrder = (a: string, b: string) => (group === 'age' ? Number(a) - Number(b) : byCodePoint(a, b));
  rows.sort((a, b) => b.row.count - a.row.count || (group === undefined ? 0 : valueOrder(a.value, b.value)));
  return rows.map(({ row }) => row);
}

describe('the mean as shown: two places, half up', () => {
  const cases: Array<[number, number, string]> = [
    [0, 1, '0.00'],
    [5, 2, '2.50'],
    [1, 3, '0.33'],
    [2, 3, '0.67'],
    [1, 8, '0.13'],
    [3, 8, '0.38'],
    [150, 1, '150.00'],
    [1999, 200, '10.00'],
    [2001, 200, '10.01'],
    [150 * 999_999_999, 999_999_999, '150.00'],
  ];
  for (const [sum, count, shown] of cases) {
    it(`${sum} / ${count} is ${shown}`, () => {
      assert.equal(meanText(sum, count), shown);
      assert.equal(expectedMean(sum, count), shown);
    });
  }
});

for (const backend of BACKENDS) {
  describe(`GET /users/stats [${backend.name}]`, { skip: backend.skip, timeout: 300_000 }, () => {
    const suite = appForSuite({}, backend);
    let seeded: Promise<unknown> | undefined;
    const seed = () => (seeded ??= suite.current.store.createMany(RECORDS));

    for (const query of QUERIES) {
      for (const group of [undefined, ...GROUP_FIELDS]) {
        const params = [group === undefined ? '' : `group=${group}`, query, 'limit=1000'].filter(Boolean).join('&');
        it(`?${params} answers the listing's records grouped`, async () => {
          await seed();
          const { app } = suite.current;
          const listing = await call(app, 'GET', `/users${query === '' ? '' : `?${query}`}`);
          assert.equal(listing.status, 200, listing.text);
          const listed = (listing.json as { data: Listed[] }).data;
          const answer = await call(app, 'GET', `/users/stats?${params}`);
          assert.equal(answer.status, 200, answer.text);
          const expected = grouped(listed, group);
          assert.deepEqual(answer.json, { data: expected });
          assert.equal(answer.headers.get('x-total-count'), String(expected.length));
        });
      }
    }

    it('gives the largest groups up to `limit`, and the number of groups in X-Total-Count', async () => {
      await seed();
      const all = await call(suite.current.app, 'GET', '/users/stats?group=city');
      const first = await call(suite.current.app, 'GET', '/users/stats?group=city&limit=2');
      assert.equal(first.status, 200, first.text);
      assert.deepEqual(first.json, { data: (all.json as { data: unknown[] }).data.slice(0, 2) });
      assert.equal(first.headers.get('x-total-count'), String(new Set(RECORDS.map((user) => user.city)).size));
    });

    it('answers at most 100 groups without `limit`', async () => {
      await seed();
      const answer = await call(suite.current.app, 'GET', '/users/stats?group=age');
      assert.equal((answer.json as { data: unknown[] }).data.length, 100);
      assert.equal(answer.headers.get('x-total-count'), String(RECORDS.length));
    });

    it('HEAD has the headers of GET and no body; If-None-Match with its ETag answers 304', async () => {
      await seed();
      const { app } = suite.current;
      const get = await call(app, 'GET', '/users/stats?group=city&q=par', {
        headers: { 'accept-encoding': 'identity' },
      });
      const head = await call(app, 'HEAD', '/users/stats?group=city&q=par', {
        headers: { 'accept-encoding': 'identity' },
      });
      assert.equal(head.status, 200);
      assert.equal(head.text, '');
      const etag = get.headers.get('etag') ?? '';
      assert.match(etag, /^"[A-Za-z0-9_-]+"$/);
      assert.equal(head.headers.get('etag'), etag);
      assert.equal(head.headers.get('x-total-count'), get.headers.get('x-total-count'));
      const again = await call(app, 'GET', '/users/stats?group=city&q=par', {
        headers: { 'if-none-match': etag, 'accept-encoding': 'identity' },
      });
      assert.equal(again.status, 304);
      assert.equal(again.text, '');
      const other = await call(app, 'GET', '/users/stats?group=city&q=par&limit=1', {
        headers: { 'if-none-match': etag, 'accept-encoding': 'identity' },
      });
      assert.equal(other.status, 200, 'a cut by limit is another answer');
    });

    // Bad input: the listing's problems, and the route's own parameters.
    const invalid = (name: string, query: string, parameters: string[]): Scenario => ({
      name,
      method: 'GET',
      url: `/users/stats?${query}`,
      expectedStatus: 400,
      expectedProblem: { type: '/problems/invalid-input', parameters },
    });
    runScenarios(
      () => suite.current,
      [
        invalid('a group of a field that has none', 'group=name', ['group']),
        invalid('an unknown group', 'group=country', ['group']),
        invalid('an empty group', 'group=', ['group']),
        invalid('two groups', 'group=city&group=age', ['group']),
        invalid('limit 0 and 1001', 'limit=0&q=a&age.gte=x', ['limit', 'age.gte']),
        invalid('limit past the cap', 'limit=1001', ['limit']),
        invalid("the listing's order, pages and fields", 'sort=age&after=1&cursor=abc&fields=id', [
          'sort',
          'after',
          'cursor',
          'fields',
        ]),
        invalid('an unknown parameter beside a good one', 'group=city&colour=red', ['colour']),
        invalid('a blank city and an empty search', 'city=%20&q=', ['city', 'q']),
        invalid('an age out of range', 'age=151&age.lt=-1', ['age', 'age.lt']),
        invalid('a date that does not exist', 'createdAt.gte=2026-02-30T00:00:00Z', ['createdAt.gte']),
        invalid('malformed percent-encoding', 'city=%E0%A4%A', ['city']),
        {
          name: 'POST /users/stats answers 405 with Allow, not as a record id',
          method: 'POST',
          url: '/users/stats',
          expectedStatus: 405,
          expectedHeaders: { allow: 'GET, HEAD, OPTIONS' },
          expectedProblem: { type: '/problems/method-not-allowed' },
        },
        {
          name: 'DELETE /users/stats answers 405',
          method: 'DELETE',
          url: '/users/stats',
          expectedStatus: 405,
          expectedProblem: { type: '/problems/method-not-allowed' },
        },
        {
          name: 'OPTIONS /users/stats names its methods',
          method: 'OPTIONS',
          url: '/users/stats',
          expectedStatus: 204,
          expectedHeaders: { allow: 'GET, HEAD, OPTIONS' },
        },
        {
          name: 'GET /users/stats is the route, not an id: 200, one group of nothing when nothing matches',
          method: 'GET',
          url: '/users/stats?city=Nowhere',
          expectedStatus: 200,
          expectedBody: '{"data":[{"count":0}]}',
          expectedHeaders: { 'x-total-count': '1', 'content-type': 'application/json; charset=utf-8' },
        },
        {
          name: 'no group of nothing: an empty list',
          method: 'GET',
          url: '/users/stats?group=city&city=Nowhere',
          expectedStatus: 200,
          expectedBody: '{"data":[]}',
          expectedHeaders: { 'x-total-count': '0' },
        },
        {
          name: 'GET /users/statistics is still an id: 404',
          method: 'GET',
          url: '/users/statistics',
          expectedStatus: 404,
          expectedProblem: { type: '/problems/not-found' },
        },
      ],
    );

    it('leaves /users/:id as it was: a record by its id, 404 for none', async () => {
      await seed();
      const { app } = suite.current;
      const one = await call(app, 'GET', '/users/1');
      assert.equal(one.status, 200, one.text);
      assert.deepEqual(one.json, { data: [{ ...RECORDS[0], age: String(RECORDS[0]?.age) }] });
      const none = await call(app, 'GET', '/users/999999');
      assert.equal(none.status, 404);
    });
  });
}
