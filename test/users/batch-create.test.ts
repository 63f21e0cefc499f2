import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { appForSuite } from '../helpers/app.ts';
import { BACKENDS } from '../helpers/backends.ts';
import { type Answer, assertProblem, call } from '../helpers/http.ts';
import { runScenarios, type Scenario } from '../helpers/scenario.ts';
import { firstEvents } from '../helpers/sse.ts';

// POST /users with many records at once: a JSON array, or NDJSON lines. All or none, each record
// checked by the single create's rules, faults named by JSON Pointer, ids in the array's order, one
// change event per record, an Idempotency-Key for the whole batch.

const JSON_TYPE = { 'content-type': 'application/json' };
const NDJSON_TYPE = { 'content-type': 'application/x-ndjson' };

/** Records whose names are this run's own, so each test finds exactly what it stored. */
function people(count: number, tag = randomUUID().slice(0, 8)) {
  return Array.from({ length: count }, (_, i) => ({ name: `p${i}-${tag}`, age: i % 150, city: `c-${tag}` }));
}

const ndjson = (records: readonly unknown[]) => records.map((record) => JSON.stringify(record)).join('\n');

for (const backend of BACKENDS) {
  describe(`POST /users with many records [${backend.name}]`, { skip: backend.skip, timeout: 180_000 }, () => {
    const suite = appForSuite({}, backend);
    const app = () => suite.current.app;

    const post = (body: string, headers: Record<string, string> = JSON_TYPE, query = '') =>
      call(app(), 'POST', `/users${query}`, { headers, body });

    /** The stored records of a city, in creation order (each test's records have a city of their own). */
    async function storedIn(city: string): Promise<Array<Record<string, string>>> {
      const answer = await call(app(), 'GET', `/users?city=${encodeURIComponent(city)}&fields=id,name,age,city`);
      assert.equal(answer.status, 200, answer.text);
      return answer.json.data;
    }

    it('a JSON array is stored in order: the answer is every record, ids rising in the array order', async () => {
      const records = people(5);
      const answer = await post(JSON.stringify(records), JSON_TYPE, '?fields=id,name,age,city');
      assert.equal(answer.status, 200, answer.text);
      const data = answer.json.data as Array<Record<string, string>>;
      assert.deepEqual(
        data.map(({ name, age, city }) => ({ name, age: Number(age), city })),
        records,
      );
      const ids = data.map((record) => Number(record.id));
      assert.deepEqual(
        [...ids].sort((a, b) => a - b),
        ids,
        'ids rise in the array order',
      );
      assert.deepEqual(await storedIn(records[0]?.city as string), data);
    });

    it('without fields, each record is exactly name, age and city, as a single create answers', async () => {
      const [record] = people(1);
      const answer = await post(JSON.stringify([record]));
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.json, { data: [{ name: record?.name, age: String(record?.age), city: record?.city }] });
    });

    it('NDJSON lines are a batch too: blank lines and CRLF endings are allowed', async () => {
      const records = people(3);
      const body = `${JSON.stringify(records[0])}\r\n\n${JSON.stringify(records[1])}\n  \n${JSON.stringify(records[2])}\n`;
      const answer = await post(body, NDJSON_TYPE, '?fields=name');
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.json, { data: records.map(({ name }) => ({ name })) });
    });

    it('values are brought into shape as for one record: text trimmed, age as digits or a JSON number', async () => {
      const tag = randomUUID().slice(0, 8);
      const answer = await post(
        JSON.stringify([
          { name: `  a-${tag} `, age: 7, city: ` c-${tag}` },
          { name: `b-${tag}`, age: '8', city: `c-${tag}` },
        ]),
      );
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.json.data, [
        { name: `a-${tag}`, age: '7', city: `c-${tag}` },
        { name: `b-${tag}`, age: '8', city: `c-${tag}` },
      ]);
    });

    it('one bad record stores none of them; every fault is named by its place', async () => {
      const records: unknown[] = people(4);
      const city = (records[0] as { city: string }).city;
      records[1] = { ...(records[1] as object), age: 151 };
      records[3] = { name: 'x' };
      const answer = await post(JSON.stringify(records));
      const problem = assertProblem(answer, 400);
      assert.equal(problem.type, '/problems/invalid-input');
      assert.deepEqual(
        problem.errors.map((error: { parameter: string }) => error.parameter),
        ['/1/age', '/3/age', '/3/city'],
      );
      assert.deepEqual(await storedIn(city), []);
    });

    it(`1,000 records are one request; 1,001 are refused with 413 and nothing is stored`, async () => {
      const tag = randomUUID().slice(0, 8);
      // Long names: the body is far past the 64 KiB other requests may have.
      const records = people(1000, tag).map((record) => ({ ...record, name: `${record.name}-${'n'.repeat(150)}` }));
      const body = JSON.stringify(records);
      assert.ok(body.length > 64 * 1024);
      const stored = await post(body);
      assert.equal(stored.status, 200, stored.text.slice(0, 300));
      assert.equal(stored.json.data.length, 1000);
      const more = people(1001);
      for (const [text, headers] of [
        [JSON.stringify(more), JSON_TYPE],
        [ndjson(more), NDJSON_TYPE],
      ] as const) {
        const refused = await post(text, headers);
        const problem = assertProblem(refused, 413);
        assert.equal(problem.type, '/problems/payload-too-large');
        assert.match(problem.detail, /at most 1000 records/);
      }
      assert.deepEqual(await storedIn(more[0]?.city as string), []);
      assert.equal((await storedIn(records[0]?.city as string)).length, 1000);
    });

    it('each record is one change event, in the array order', async () => {
      const before = await suite.current.store.version();
      const records = people(3);
      const answer = await post(JSON.stringify(records), JSON_TYPE, '?fields=id');
      assert.equal(answer.status, 200, answer.text);
      const events = await firstEvents(suite.current.url, { 'last-event-id': String(before) }, 3);
      assert.deepEqual(
        events.map((event) => [event.event, Number(event.id), JSON.parse(event.data as string).data]),
        records.map((record, i) => [
          'user.created',
          before + 1 + i,
          { id: Number(answer.json.data[i].id), name: record.name, age: String(record.age), city: record.city },
        ]),
      );
    });

    describe('Idempotency-Key covers the whole batch', () => {
      const keyed = (key: string, body: string, query = '') =>
        call(app(), 'POST', `/users${query}`, { headers: { ...JSON_TYPE, 'idempotency-key': key }, body });

      function assertReplay(replay: Answer, first: Answer): void {
        assert.equal(replay.status, 200, replay.text);
        assert.equal(replay.text, first.text);
        assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      }

      it('a retry gets the first answer and stores nothing; other input with the key is 422', async () => {
        const key = `k-${randomUUID()}`;
        const records = people(3);
        const body = JSON.stringify(records);
        const first = await keyed(key, body, '?fields=id,name');
        assert.equal(first.status, 200, first.text);
        assert.equal(first.headers.get('idempotent-replayed'), null);
        assertReplay(await keyed(key, body, '?fields=id,name'), first);
        // Sent as NDJSON, the same records are the same request.
        const asLines = await call(app(), 'POST', '/users?fields=id,name', {
          headers: { ...NDJSON_TYPE, 'idempotency-key': key },
          body: ndjson(records),
        });
        assertReplay(asLines, first);
        assert.equal((await storedIn(records[0]?.city as string)).length, 3);
        for (const other of [JSON.stringify(records.slice(0, 2)), JSON.stringify(records[0])]) {
          const refused = await keyed(key, other, '?fields=id,name');
          assert.equal(assertProblem(refused, 422).type, '/problems/idempotency-key-reused');
        }
        assert.equal(
          assertProblem(await keyed(key, body), 422).type,
          '/problems/idempotency-key-reused',
          'other fields make another request',
        );
      });

      it('a single create key is not a batch key, nor the other way round', async () => {
        const key = `k-${randomUUID()}`;
        const [record] = people(1);
        assert.equal((await keyed(key, JSON.stringify(record))).status, 200);
        assert.equal(
          assertProblem(await keyed(key, JSON.stringify([record])), 422).type,
          '/problems/idempotency-key-reused',
        );
      });

      it('once a record of the batch is deleted, a retry is refused with 409 and stores nothing', async () => {
        const key = `k-${randomUUID()}`;
        const records = people(2);
        const body = JSON.stringify(records);
        const first = await keyed(key, body, '?fields=id');
        assert.equal(first.status, 200, first.text);
        const deleted = await call(app(), 'DELETE', `/users/${first.json.data[1].id}`);
        assert.equal(deleted.status, 200, deleted.text);
        const refused = await keyed(key, body, '?fields=id');
        assert.equal(assertProblem(refused, 409).type, '/problems/idempotency-key-record-deleted');
        assert.equal((await storedIn(records[0]?.city as string)).length, 1);
      });

      it('an empty batch is refused and its key stays free (a later request with it is stored)', async () => {
        const key = `k-${randomUUID()}`;
        assert.equal(assertProblem(await keyed(key, '[]'), 400).type, '/problems/invalid-input');
        const [record] = people(1);
        const stored = await keyed(key, JSON.stringify(record));
        assert.equal(stored.status, 200, stored.text);
        assert.equal(stored.headers.get('idempotent-replayed'), null);
      });
    });

    const tag = randomUUID().slice(0, 8);
    const good = { name: `g-${tag}`, age: 1, city: `nowhere-${tag}` };
    const scenarios: Scenario[] = [
      {
        name: 'a record that is not an object is named by its place',
        method: 'POST',
        url: '/users',
        headers: JSON_TYPE,
        body: JSON.stringify([good, 5, 'x', null, [good]]),
        expectedStatus: 400,
        expectedProblem: { type: '/problems/invalid-input', parameters: ['/1', '/2', '/3', '/4'] },
      },
      {
        name: 'a key given twice in one record is refused, by its place (a record of its own, not the others)',
        method: 'POST',
        url: '/users',
        headers: JSON_TYPE,
        body: `[${JSON.stringify(good)},{"name":"a","age":1,"age":2,"city":"b"},{"name":"a","age":1,"city":"b"}]`,
        expectedStatus: 400,
        expectedProblem: { type: '/problems/invalid-input', parameters: ['/1/age'] },
      },
      {
        name: 'an unknown key is named as a JSON Pointer, with / and ~ escaped, as not a field of a record',
        method: 'POST',
        url: '/users',
        headers: JSON_TYPE,
        body: JSON.stringify([{ ...good, 'a/b~c': 1 }]),
        expectedStatus: 400,
        expectedProblem: { type: '/problems/invalid-input', parameters: ['/0/a~1b~0c'] },
        expectedContent: ['is not a field of a record'],
      },
      {
        name: 'a record field in the query string beside a batch is refused',
        method: 'POST',
        url: '/users?name=x',
        headers: JSON_TYPE,
        body: JSON.stringify([good]),
        expectedStatus: 400,
        expectedProblem: { type: '/problems/invalid-input', parameters: ['name'] },
      },
      {
        name: 'an unknown query parameter beside a batch is refused with the records’ faults',
        method: 'POST',
        url: '/users?fields=nope&extra=1',
        headers: JSON_TYPE,
        body: JSON.stringify([{ ...good, age: -1 }]),
        expectedStatus: 400,
        expectedProblem: { type: '/problems/invalid-input', parameters: ['fields', 'extra', '/0/age'] },
      },
      {
        name: 'a bad Idempotency-Key beside a batch is refused',
        method: 'POST',
        url: '/users',
        headers: { ...JSON_TYPE, 'idempotency-key': 'has space' },
        body: JSON.stringify([good]),
        expectedStatus: 400,
        expectedProblem: { type: '/problems/invalid-input', parameters: ['Idempotency-Key'] },
      },
      {
        name: 'an NDJSON line that is not JSON is named by its line',
        method: 'POST',
        url: '/users',
        headers: NDJSON_TYPE,
        body: `${JSON.stringify(good)}\n{"name":\n`,
        expectedStatus: 400,
        expectedProblem: { type: '/problems/malformed-request' },
        expectedContent: ['Line 2 of the NDJSON body'],
      },
      {
        name: 'an NDJSON line with a forbidden key is refused',
        method: 'POST',
        url: '/users',
        headers: NDJSON_TYPE,
        body: '{"__proto__":{"x":1},"name":"a","age":1,"city":"b"}',
        expectedStatus: 400,
        expectedProblem: { type: '/problems/malformed-request' },
      },
      {
        name: 'NDJSON that is not UTF-8 is refused',
        method: 'POST',
        url: '/users',
        headers: NDJSON_TYPE,
        body: Buffer.from([0x7b, 0xff, 0x7d]),
        expectedStatus: 400,
        expectedProblem: { type: '/problems/malformed-request' },
      },
      {
        name: 'NDJSON is only for POST /users: a PUT refuses the type',
        method: 'PUT',
        url: '/users/1',
        headers: NDJSON_TYPE,
        body: JSON.stringify(good),
        expectedStatus: 400,
        expectedProblem: { type: '/problems/unsupported-media-type' },
      },
      {
        name: 'an array is not the body of a PUT',
        method: 'PUT',
        url: '/users/1',
        headers: JSON_TYPE,
        body: JSON.stringify([good]),
        expectedStatus: 400,
        expectedProblem: { type: '/problems/invalid-input' },
      },
      {
        name: 'other routes keep their 64 KiB body limit',
        method: 'PUT',
        url: '/users/1',
        headers: JSON_TYPE,
        body: JSON.stringify({ ...good, name: 'n'.repeat(70 * 1024) }),
        expectedStatus: 413,
        expectedProblem: { type: '/problems/payload-too-large' },
      },
      {
        name: 'a batch of one record may not be larger than one record’s body (64 KiB)',
        method: 'POST',
        url: '/users',
        headers: JSON_TYPE,
        body: `[{"name":"x"${' '.repeat(70 * 1024)},"age":1,"city":"${good.city}"}]`,
        expectedStatus: 413,
        expectedProblem: { type: '/problems/payload-too-large' },
      },
      {
        name: 'nor an NDJSON line of one record',
        method: 'POST',
        url: '/users',
        headers: NDJSON_TYPE,
        body: `{"name":"x"${' '.repeat(70 * 1024)},"age":1,"city":"${good.city}"}`,
        expectedStatus: 413,
        expectedProblem: { type: '/problems/payload-too-large' },
      },
      {
        name: 'a body nested deeper than a record can be is refused before it is parsed',
        method: 'POST',
        url: '/users',
        headers: JSON_TYPE,
        body: `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
        expectedStatus: 400,
        expectedProblem: { type: '/problems/malformed-request' },
        expectedContent: ['nested deeper than 8 levels'],
      },
      {
        name: 'a record of thousands of names is refused before it is parsed',
        method: 'POST',
        url: '/users',
        headers: JSON_TYPE,
        body: `[{${Array.from({ length: 5000 }, (_, i) => `"k${i}":0`).join(',')}}]`,
        expectedStatus: 400,
        expectedProblem: { type: '/problems/malformed-request' },
        expectedContent: ['more than 50 names'],
      },
      {
        name: 'an NDJSON line of thousands of names too',
        method: 'POST',
        url: '/users',
        headers: NDJSON_TYPE,
        body: `{${Array.from({ length: 5000 }, (_, i) => `"k${i}":0`).join(',')}}`,
        expectedStatus: 400,
        expectedProblem: { type: '/problems/malformed-request' },
        expectedContent: ['Line 1 of the NDJSON body has an object of more than 50 names'],
      },
      {
        name: 'an NDJSON line with a forbidden key says so',
        method: 'POST',
        url: '/users',
        headers: NDJSON_TYPE,
        body: '{"name":"a","age":1,"city":"b","__proto__":{}}',
        expectedStatus: 400,
        expectedProblem: { type: '/problems/malformed-request' },
        expectedContent: ['forbidden key'],
      },
      {
        name: 'NDJSON of blank lines holds no records',
        method: 'POST',
        url: '/users',
        headers: NDJSON_TYPE,
        body: '\n  \n\n',
        expectedStatus: 400,
        expectedProblem: { type: '/problems/invalid-input' },
        expectedContent: ['The body holds no records'],
      },
      {
        name: 'a POST /users body past 2 MiB is refused with 413',
        method: 'POST',
        url: '/users',
        headers: JSON_TYPE,
        body: JSON.stringify(Array.from({ length: 900 }, () => ({ ...good, name: 'n'.repeat(2400) }))),
        expectedStatus: 413,
        expectedProblem: { type: '/problems/payload-too-large' },
      },
    ];
    describe('refusals', () => {
      runScenarios(() => suite.current, scenarios);
      it('none of the refused batches stored anything', async () => {
        assert.deepEqual(await storedIn(good.city), []);
      });
    });
  });
}
