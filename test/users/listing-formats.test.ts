import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { csvRecords } from '../../src/cli/csv-records.ts';
import { selectedFields } from '../../src/record/json.ts';
import { appForSuite } from '../helpers/app.ts';
import { BACKENDS } from '../helpers/backends.ts';
import { type Answer, call } from '../helpers/http.ts';
import { scaled } from '../helpers/scale.ts';
import { runScenarios, type Scenario } from '../helpers/scenario.ts';

// GET /users as CSV and NDJSON (Accept): the same records as the JSON listing for every kind of
// query, the same Link and count headers, its own ETag, Vary: Accept, 406, and a listing of several
// pages streamed whole, compressed or not; on each store.

const CSV = { accept: 'text/csv' };
const NDJSON = { accept: 'application/x-ndjson' };

/**
 * Records whose values need care in CSV: commas, quotes, semicolons, non-ASCII, values that start
 * like a spreadsheet formula, and line breaks (which the API's input rule refuses; stored through
 * the store, as a database written by other means might hold them).
 */
const PEOPLE: ReadonlyArray<[string, number, string]> = [
  ['Alice', 30, 'Paris'],
  ['Smith, John', 41, 'Paris'],
  ['Ada "the Countess"', 36, 'London'],
  ['Zoë 李小龙 🌍', 7, 'Zürich'],
  ['=1+1', 52, 'Paris'],
  ['-5 Degrees', 19, '+Oslo'],
  ['@home', 64, 'São Paulo; SP'],
  ['Émile', 36, 'paris'],
  ['Two\nlines', 5, 'Paris\r\nNord'],
  ['Tab\there', 88, '\tLyon'],
  ['Bob', 150, 'Paris'],
  ['Chloé', 0, 'Lyon'],
];

/** A value as the CSV must show it: made inert in a spreadsheet as the command line's export does. */
const inert = (value: string) => (/^[=+\-@\t\r]/.test(value) ? `'${value}` : value);

async function parseCsv(text: string): Promise<string[][]> {
  const rows: string[][] = [];
  for await (const batch of csvRecords(
    (async function* () {
      yield text;
    })(),
  )) {
    for (const record of batch) rows.push(record.fields);
  }
  return rows;
}

/** The rows the CSV of a JSON page must hold: its header (the fields), then each record's values. */
function csvOfJson(data: ReadonlyArray<Record<string, unknown>>, fields: readonly string[]): string[][] {
  for (const record of data) assert.deepEqual(Object.keys(record), fields, 'the JSON keys are the header');
  return [[...fields], ...data.map((record) => fields.map((field) => inert(String(record[field]))))];
}

const ndjsonOf = (text: string) =>
  text === ''
    ? []
    : text
        .split('\n')
        .filter((line, i, lines) => line !== '' || i < lines.length - 1)
        .map((line) => JSON.parse(line) as unknown);

/** Every page of a listing, by its Link, in one format; a page of each answer kept. */
async function walk(app: Parameters<typeof call>[0], url: string, headers: Record<string, string>) {
  const answers: Answer[] = [];
  let next: string | undefined = url;
  for (let guard = 0; next !== undefined && guard < 100; guard++) {
    const answer = await call(app, 'GET', next, { headers });
    assert.equal(answer.status, 200, `${next}: ${answer.text}`);
    answers.push(answer);
    next = /<([^>]*)>; rel="next"/.exec(answer.headers.get('link') ?? '')?.[1];
  }
  assert.equal(next, undefined, 'the pages end');
  return answers;
}

/** Listings of every kind: each filter, a range, a search, sorts, fields, pages (after, cursor) and a count. */
const QUERIES: ReadonlyArray<{ url: string; prefer?: string }> = [
  { url: '/users' },
  { url: '/users?city=Paris' },
  { url: `/users?name=${encodeURIComponent('Smith, John')}` },
  { url: '/users?age=36' },
  { url: '/users?age.gte=30&age.lt=100' },
  { url: '/users?q=paris' },
  { url: '/users?q=%C3%A9mile' },
  { url: '/users?sort=-age,name' },
  { url: '/users?sort=city&fields=city,age' },
  { url: '/users?fields=updatedAt,id,name,createdAt' },
  { url: '/users?fields=id' },
  { url: '/users?city=Atlantis' },
  { url: '/users?limit=5' },
  { url: '/users?limit=4&after=3&fields=id,name,age,city' },
  { url: '/users?sort=name&limit=4' },
  { url: '/users?sort=-age&limit=5&fields=name,age' },
  { url: '/users?q=is&sort=age&limit=2&fields=id,name' },
  { url: '/users?city=Paris&limit=2', prefer: 'count=exact' },
  { url: '/users?age.lte=40', prefer: 'count=exact' },
  { url: '/users', prefer: 'count=exact' },
];

for (const backend of BACKENDS) {
  describe(`GET /users as CSV and NDJSON [${backend.name}]`, { skip: backend.skip }, () => {
    const suite = appForSuite({}, backend);
    const app = () => suite.current.app;

    it('stores the records', async () => {
      for (const [name, age, city] of PEOPLE) await suite.current.store.create({ name, age, city });
    });

    for (const { url, prefer } of QUERIES) {
      it(`${url}${prefer === undefined ? '' : ` (Prefer: ${prefer})`}: the rows and headers JSON has`, async () => {
        const extra: Record<string, string> = prefer === undefined ? {} : { prefer };
        const json = await walk(app(), url, extra);
        const csv = await walk(app(), url, { ...extra, ...CSV });
        const ndjson = await walk(app(), url, { ...extra, ...NDJSON });
        assert.equal(csv.length, json.length, 'as many pages');
        assert.equal(ndjson.length, json.length, 'as many pages');
        const fields = selectedFields(new URL(url, 'http://x').searchParams.get('fields') ?? undefined);
        for (const [i, page] of json.entries()) {
          const data = page.json.data as Array<Record<string, unknown>>;
          const asCsv = csv[i] as Answer;
          const asNdjson = ndjson[i] as Answer;
          assert.deepEqual(await parseCsv(asCsv.text), csvOfJson(data, fields), `CSV page ${i + 1}`);
          assert.ok(asCsv.text.endsWith('\r\n'), 'CRLF line ends');
          assert.deepEqual(ndjsonOf(asNdjson.text), data, `NDJSON page ${i + 1}`);
          assert.equal(asCsv.headers.get('content-type'), 'text/csv; charset=utf-8; header=present');
          assert.equal(asNdjson.headers.get('content-type'), 'application/x-ndjson; charset=utf-8');
          for (const name of ['link', 'x-total-count', 'preference-applied']) {
            assert.equal(asCsv.headers.get(name), page.headers.get(name), `CSV ${name}`);
            assert.equal(asNdjson.headers.get(name), page.headers.get(name), `NDJSON ${name}`);
          }
          // Each format its own validator: never the JSON one, never each other's.
          const tags = [page, asCsv, asNdjson].map((answer) => answer.headers.get('etag') ?? '');
          assert.equal(new Set(tags).size, 3, `ETags ${tags.join(' ')}`);
          assert.match(tags[1] as string, /-csv"$/);
          assert.match(tags[2] as string, /-ndjson"$/);
          for (const answer of [page, asCsv, asNdjson]) {
            assert.equal(answer.headers.get('vary'), 'Accept, Prefer, Accept-Encoding');
          }
        }
      });
    }

    it('quotes what must be quoted, doubles quotes, keeps non-ASCII as UTF-8 and makes formulas inert', async () => {
      const answer = await call(app(), 'GET', '/users?fields=name,city', { headers: CSV });
      const lines = [
        'name,city',
        'Alice,Paris',
        '"Smith, John",Paris',
        '"Ada ""the Countess""",London',
        'Zoë 李小龙 🌍,Zürich',
        "'=1+1,Paris",
        "'-5 Degrees,'+Oslo",
        `'@home,"São Paulo; SP"`,
        'Émile,paris',
        '"Two\nlines","Paris\r\nNord"',
        `"Tab\there","'\tLyon"`,
        'Bob,Paris',
        'Chloé,Lyon',
      ];
      assert.equal(answer.text, lines.map((line) => `${line}\r\n`).join(''));
      const ndjson = await call(app(), 'GET', '/users?fields=name&limit=5', { headers: NDJSON });
      assert.equal(ndjson.text.split('\n')[4], '{"name":"=1+1"}', 'NDJSON holds the value as stored');
    });

    it('a conditional request never gets a 304 for another format', async () => {
      for (const url of ['/users', '/users?city=Paris', '/users?limit=3']) {
        const tags = new Map<string, string>();
        for (const accept of ['application/json', 'text/csv', 'application/x-ndjson']) {
          tags.set(accept, (await call(app(), 'GET', url, { headers: { accept } })).headers.get('etag') ?? '');
        }
        for (const [accept, own] of tags) {
          for (const [other, tag] of tags) {
            const answer = await call(app(), 'GET', url, { headers: { accept, 'if-none-match': tag } });
            assert.equal(answer.status, other === accept ? 304 : 200, `${url} as ${accept}, If-None-Match of ${other}`);
            assert.equal(answer.headers.get('etag'), own);
          }
        }
      }
    });

    it('HEAD answers the headers GET does, no body', async () => {
      for (const headers of [CSV, NDJSON, { ...CSV, prefer: 'count=exact' }]) {
        for (const url of ['/users', '/users?city=Paris', '/users?limit=2']) {
          const get = await call(app(), 'GET', url, { headers });
          const head = await call(app(), 'HEAD', url, { headers });
          assert.equal(head.status, 200);
          assert.equal(head.text, '');
          for (const name of ['content-type', 'etag', 'vary', 'link', 'x-total-count']) {
            assert.equal(head.headers.get(name), get.headers.get(name), `${url} ${name}`);
          }
        }
      }
    });

    // Which format each Accept gets; errors stay JSON problems whatever Accept said.
    const negotiation: Scenario[] = [
      ...[
        ['no Accept', undefined, 'application/json'],
        ['*/*', '*/*', 'application/json'],
        ['application/json', 'application/json', 'application/json'],
        ['application/*', 'application/*', 'application/json'],
        ['a browser', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'application/json'],
        ['an empty Accept', '', 'application/json'],
        ['CSV below JSON', 'text/csv;q=0.9, application/json', 'application/json'],
        ['CSV above JSON', 'text/csv, application/json;q=0.9', 'text/csv'],
        ['CSV and NDJSON equal', 'application/x-ndjson, text/csv', 'text/csv'],
        ['text/*', 'text/*', 'text/csv'],
        ['upper case, a charset', 'TEXT/CSV; charset=utf-8', 'text/csv'],
        ['JSON refused, anything else', 'application/json;q=0, */*', 'text/csv'],
        ['NDJSON', 'application/x-ndjson', 'application/x-ndjson'],
        ['NDJSON above the rest', 'application/x-ndjson, */*;q=0.1', 'application/x-ndjson'],
      ].map(([name, accept, type]): Scenario => ({
        name: `Accept ${name}: ${type}`,
        method: 'GET',
        url: '/users?limit=1&fields=id',
        headers: accept === undefined ? {} : { accept },
        expectedStatus: 200,
        expectedHeaders: { 'content-type': new RegExp(`^${type}`), vary: 'Accept, Prefer, Accept-Encoding' },
      })),
      ...[
        'text/html',
        'application/xml',
        'text/csv;q=0',
        'text/csv;q=0, application/*;q=0',
        'image/*',
        ';;;,,',
        '*/*;q=0',
      ].map((accept): Scenario => ({
        name: `Accept ${JSON.stringify(accept)}: 406, as a JSON problem`,
        method: 'GET',
        url: '/users?city=Paris',
        headers: { accept },
        expectedStatus: 406,
        expectedProblem: { type: '/problems/not-acceptable' },
        expectedContent: ['application/json, text/csv, application/x-ndjson'],
        expectedHeaders: { vary: 'Accept, Prefer, Accept-Encoding' },
      })),
      {
        name: 'HEAD with an Accept no type satisfies: 406',
        method: 'HEAD',
        url: '/users',
        headers: { accept: 'text/html' },
        expectedStatus: 406,
      },
      {
        name: 'bad input asked for as CSV: a JSON problem',
        method: 'GET',
        url: '/users?age=old&colour=red',
        headers: CSV,
        expectedStatus: 400,
        expectedProblem: { type: '/problems/invalid-input', parameters: ['age', 'colour'] },
      },
      {
        name: 'a cursor of another sort asked for as NDJSON: a JSON problem',
        method: 'GET',
        url: '/users?sort=name&cursor=garbage',
        headers: NDJSON,
        expectedStatus: 400,
        expectedProblem: { type: '/problems/invalid-input', parameters: ['cursor'] },
      },
      {
        name: 'an empty match as CSV: the header row alone',
        method: 'GET',
        url: '/users?city=Atlantis&fields=age,id',
        headers: CSV,
        expectedStatus: 200,
        expectedBody: 'id,age\r\n',
      },
      {
        name: 'an empty page as NDJSON: no lines',
        method: 'GET',
        url: '/users?city=Atlantis&limit=5',
        headers: NDJSON,
        expectedStatus: 200,
        expectedBody: '',
      },
      {
        name: 'the JSON listing with no Accept is the original contract',
        method: 'GET',
        url: '/users?fields=name&limit=2',
        expectedStatus: 200,
        expectedBody: '{"data":[{"name":"Alice"},{"name":"Smith, John"}]}',
        expectedHeaders: { 'content-type': 'application/json; charset=utf-8' },
      },
    ];
    runScenarios(() => suite.current, negotiation);
  });

  describe(`a CSV listing of several pages, streamed whole [${backend.name}]`, { skip: backend.skip }, () => {
    const suite = appForSuite({}, backend);
    const count = scaled(2_600, 100_000);

    it(`${count} records, as CSV and NDJSON over a socket, compressed and not`, async () => {
      for (let first = 0; first < count; first += 1000) {
        const inputs = Array.from({ length: Math.min(1000, count - first) }, (_, i) => ({
          name: `p, "${first + i}"`,
          age: (first + i) % 151,
          city: 'Paris',
        }));
        assert.equal((await suite.current.store.createMany(inputs)).ok, true);
      }
      const ids = Array.from({ length: count }, (_, i) => String(i + 1));
      for (const url of ['/users', '/users?city=Paris&fields=id,name']) {
        for (const coding of ['identity', 'gzip', 'br']) {
          const headers = { 'accept-encoding': coding };
          // fetch, over a real socket, undoes the coding itself.
          const csv = await call(suite.current.url, 'GET', url, { headers: { ...headers, ...CSV } });
          const ndjson = await call(suite.current.url, 'GET', url, { headers: { ...headers, ...NDJSON } });
          for (const answer of [csv, ndjson]) {
            assert.equal(answer.status, 200);
            assert.equal(answer.headers.get('content-encoding'), coding === 'identity' ? null : coding);
            assert.equal(answer.headers.get('content-length'), null, 'streamed, not built whole');
          }
          const rows = await parseCsv(csv.text);
          const fields = url === '/users' ? ['name', 'age', 'city'] : ['id', 'name'];
          assert.deepEqual(rows[0], fields);
          assert.equal(rows.length, count + 1, `${url} ${coding}: every record`);
          const lines = ndjsonOf(ndjson.text) as Array<Record<string, string>>;
          assert.equal(lines.length, count);
          if (url !== '/users') {
            assert.deepEqual(
              rows.slice(1).map((row) => row[0]),
              ids,
            );
            assert.deepEqual(
              lines.map((line) => String(line.id)),
              ids,
            );
          }
          assert.equal(rows.at(-1)?.[fields.indexOf('name')], `p, "${count - 1}"`, 'the last record');
        }
      }
    });

    it('CSV and NDJSON are compressed as JSON is: a page, and a listing as it streams', async () => {
      for (const accept of ['text/csv', 'application/x-ndjson']) {
        for (const url of ['/users?limit=200', '/users?city=Paris&fields=id,name']) {
          const plain = await suite.current.app.inject({ url, headers: { accept } });
          for (const [coding, decode] of [
            ['gzip', gunzipSync],
            ['br', brotliDecompressSync],
          ] as const) {
            const answer = await suite.current.app.inject({ url, headers: { accept, 'accept-encoding': coding } });
            assert.equal(answer.headers['content-encoding'], coding, `${accept} ${url}`);
            assert.equal(decode(answer.rawPayload).toString(), plain.body);
            assert.equal(answer.headers.etag, `${String(plain.headers.etag).slice(0, -1)}-${coding}"`);
            assert.equal(answer.headers.vary, 'Accept, Prefer, Accept-Encoding');
          }
        }
      }
    });
  });
}
