import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { appForSuite } from '../helpers/app.ts';
import { BACKENDS } from '../helpers/backends.ts';
import { assertProblem, call, createUser, rawRequest } from '../helpers/http.ts';
import { runScenario } from '../helpers/scenario.ts';

// Every row of the endpoint table in docs/api.md, in process (buildApp, app.inject) on each store;
// the original contract over real HTTP is test/users/contract.test.ts.
for (const backend of BACKENDS) {
  describe(`endpoints [${backend.name}]`, { skip: backend.skip }, () => {
    const suite = appForSuite({}, backend);
    let base: FastifyInstance;
    before(() => {
      base = suite.current.app;
    });

    it('POST /users answers Location and ETag; ids are positive, increasing integers', async () => {
      const first = await createUser(base, 'Ann', 20, 'Lyon');
      const second = await createUser(base, 'Ben', 21, 'Lyon');
      assert.ok(first >= 1 && second > first);
      const answer = await call(base, 'POST', '/users?name=Cid&age=22&city=Nice');
      const location = answer.headers.get('location') ?? '';
      assert.equal(answer.headers.get('content-location'), location);
      const read = await call(base, 'GET', location);
      assert.equal(answer.headers.get('etag'), read.headers.get('etag'), 'the POST ETag is the new record ETag');
    });

    it('POST /users also takes a JSON body or a form body, with the same rules', async () => {
      const json = await call(base, 'POST', '/users?fields=id,name,age,city', {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: '  Dee  ', age: 33, city: 'Oslo' }),
      });
      assert.equal(json.status, 200, json.text);
      assert.equal(json.json.data[0].name, 'Dee');
      assert.equal(json.json.data[0].age, '33');
      const form = await call(base, 'POST', '/users', {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'name=Eve+Li&age=044&city=Bergen',
      });
      assert.equal(form.status, 200, form.text);
      assert.deepEqual(form.json.data, [{ name: 'Eve Li', age: '44', city: 'Bergen' }]);
    });

    it('GET and HEAD /users/:id read one record; fields selects keys in canonical order', async () => {
      const id = await createUser(base, 'Fay', 50, 'Graz');
      const plain = await call(base, 'GET', `/users/${id}`);
      assert.equal(plain.status, 200);
      assert.deepEqual(plain.json, { data: [{ name: 'Fay', age: '50', city: 'Graz' }] });
      const chosen = await call(base, 'GET', `/users/${id}?fields=updatedAt,city,id,createdAt`);
      const record = chosen.json.data[0];
      assert.deepEqual(Object.keys(record), ['id', 'city', 'createdAt', 'updatedAt']);
      assert.equal(record.id, id);
      assert.match(record.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
      const head = await call(base, 'HEAD', `/users/${id}`);
      assert.equal(head.status, 200);
      assert.equal(head.text, '');
      assert.equal(head.headers.get('etag'), plain.headers.get('etag'));
    });

    it('PUT /users/:id replaces the record and needs all three fields', async () => {
      const id = await createUser(base, 'Gus', 60, 'Bern');
      const put = await call(base, 'PUT', `/users/${id}?name=Gus+B&age=61&city=Basel&fields=id,name,age,city`);
      assert.equal(put.status, 200, put.text);
      assert.deepEqual(put.json, { data: [{ id, name: 'Gus B', age: '61', city: 'Basel' }] });
      const partial = await call(base, 'PUT', `/users/${id}?name=Only`);
      const problem = assertProblem(partial, 400);
      assert.deepEqual(problem.errors.map((error: { parameter: string }) => error.parameter).sort(), ['age', 'city']);
      const read = await call(base, 'GET', `/users/${id}`);
      assert.deepEqual(read.json.data, [{ name: 'Gus B', age: '61', city: 'Basel' }]);
    });

    it('PATCH /users/:id changes only the given fields, at least one', async () => {
      const id = await createUser(base, 'Hal', 70, 'Kiel');
      const patch = await call(base, 'PATCH', `/users/${id}`, {
        headers: { 'content-type': 'application/json' },
        body: '{"city":"Ulm"}',
      });
      assert.equal(patch.status, 200, patch.text);
      assert.deepEqual(patch.json.data, [{ name: 'Hal', age: '70', city: 'Ulm' }]);
      assertProblem(await call(base, 'PATCH', `/users/${id}`), 400);
      const times = (await call(base, 'GET', `/users/${id}?fields=createdAt,updatedAt`)).json.data[0];
      assert.ok(times.updatedAt >= times.createdAt);
    });

    it('DELETE /users/:id answers the deleted record; then it is gone and its id is not reused', async () => {
      const id = await createUser(base, 'Ivy', 80, 'Pisa');
      const deleted = await call(base, 'DELETE', `/users/${id}`);
      assert.equal(deleted.status, 200);
      assert.deepEqual(deleted.json, { data: [{ name: 'Ivy', age: '80', city: 'Pisa' }] });
      assertProblem(await call(base, 'GET', `/users/${id}`), 404);
      assertProblem(await call(base, 'DELETE', `/users/${id}`), 404);
      const next = await createUser(base, 'Jon', 81, 'Pisa');
      assert.ok(next > id);
    });

    it('answers 404 for ids that are not stored positive integers, and for unknown paths', async () => {
      for (const path of [
        '/users/0',
        '/users/-1',
        '/users/1.5',
        '/users/abc',
        '/users/00',
        '/users/99999999',
        '/nope',
      ]) {
        await runScenario(suite.current, {
          name: path,
          method: 'GET',
          url: path,
          expectedStatus: 404,
          expectedProblem: {},
        });
      }
      await runScenario(suite.current, {
        name: 'PUT on a path that is not an id',
        method: 'PUT',
        url: '/users/abc?name=a&age=1&city=b',
        expectedStatus: 404,
        expectedProblem: {},
      });
    });

    it('reads an id written with leading zeros as the same record, as every number is read', async () => {
      const id = await createUser(suite.current.app, 'Zero', 30, 'Oslo');
      const plain = await call(suite.current.app, 'GET', `/users/${id}`);
      const padded = await call(suite.current.app, 'GET', `/users/000${id}`);
      assert.equal(padded.status, 200);
      assert.equal(padded.text, plain.text);
      assert.equal(padded.headers.get('etag'), plain.headers.get('etag'));
    });

    it('answers 405 with Allow for a method a path does not serve', async () => {
      const cases: Array<[string, string, string]> = [
        ['DELETE', '/users', 'GET, POST, HEAD, OPTIONS'],
        ['PUT', '/users', 'GET, POST, HEAD, OPTIONS'],
        ['PATCH', '/users', 'GET, POST, HEAD, OPTIONS'],
        ['POST', '/users/1', 'GET, PUT, PATCH, DELETE, HEAD, OPTIONS'],
        ['PROPFIND', '/users/1', 'GET, PUT, PATCH, DELETE, HEAD, OPTIONS'],
      ];
      for (const [method, path, allow] of cases) {
        await runScenario(suite.current, {
          name: `${method} ${path}`,
          method,
          url: path,
          expectedStatus: 405,
          expectedProblem: {},
          expectedHeaders: { allow },
        });
      }
      // As Node's parser reads a TRACE off the wire, over the app's socket.
      const trace = await rawRequest(
        suite.current.url,
        'TRACE /users HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
      );
      assert.equal(trace.status, 405);
      assert.equal(JSON.parse(trace.body).status, 405);
      await runScenario(suite.current, {
        name: 'OPTIONS /users',
        method: 'OPTIONS',
        url: '/users',
        expectedStatus: 204,
        expectedHeaders: { allow: 'GET, POST, HEAD, OPTIONS' },
      });
    });

    describe('filters and pages', () => {
      const city = `Pageville-${process.pid}`;
      const ids: number[] = [];
      before(async () => {
        for (let i = 0; i < 7; i++) ids.push(await createUser(base, `P${i}`, i % 2 === 0 ? 30 : 31, city));
      });

      it('filters match exactly and combine', async () => {
        const byCity = await call(base, 'GET', `/users?city=${encodeURIComponent(city)}&fields=id`);
        assert.deepEqual(
          byCity.json.data.map((record: { id: number }) => record.id),
          ids,
        );
        const both = await call(base, 'GET', `/users?city=${encodeURIComponent(city)}&age=31&fields=name`);
        assert.deepEqual(both.json.data, [{ name: 'P1' }, { name: 'P3' }, { name: 'P5' }]);
        const none = await call(base, 'GET', '/users?name=nobody-by-this-name');
        assert.equal(none.text, '{"data":[]}');
      });

      it('limit and after walk every page in creation order, Link pointing to the next', async () => {
        const seen: number[] = [];
        let path: string | undefined = `/users?city=${encodeURIComponent(city)}&limit=3&fields=id`;
        let pages = 0;
        while (path !== undefined && pages < 10) {
          const page = await call(base, 'GET', path);
          assert.equal(page.status, 200);
          assert.deepEqual(Object.keys(page.json), ['data']);
          seen.push(...page.json.data.map((record: { id: number }) => record.id));
          const link = page.headers.get('link');
          path = link === null ? undefined : /^<([^>]+)>; rel="next"$/.exec(link)?.[1];
          pages++;
        }
        assert.deepEqual(seen, ids);
        assert.equal(pages, 3);
      });
    });

    describe('conditional requests', () => {
      it('every GET answers an ETag; If-None-Match with it answers 304 with no body', async () => {
        for (const path of ['/users', '/users?fields=id']) {
          const first = await call(base, 'GET', path);
          const etag = first.headers.get('etag');
          assert.ok(etag);
          const again = await call(base, 'GET', path, { headers: { 'if-none-match': etag } });
          assert.equal(again.status, 304);
          assert.equal(again.text, '');
        }
      });

      it('a write changes the list ETag, so a stale If-None-Match gets the new list', async () => {
        const before = await call(base, 'GET', '/users');
        await createUser(base, 'Kai', 5, 'Bonn');
        const after = await call(base, 'GET', '/users', {
          headers: { 'if-none-match': before.headers.get('etag') ?? '' },
        });
        assert.equal(after.status, 200);
        assert.notEqual(after.headers.get('etag'), before.headers.get('etag'));
      });

      it('If-Match guards PUT, PATCH and DELETE: a stale ETag gets 412 and changes nothing', async () => {
        const id = await createUser(base, 'Lia', 9, 'Metz');
        const etag = (await call(base, 'GET', `/users/${id}`)).headers.get('etag') ?? '';
        const changed = await call(base, 'PATCH', `/users/${id}?age=10`, { headers: { 'if-match': etag } });
        assert.equal(changed.status, 200);
        const fresh = changed.headers.get('etag') ?? '';
        assert.notEqual(fresh, etag);
        assertProblem(
          await call(base, 'PUT', `/users/${id}?name=X&age=1&city=Y`, { headers: { 'if-match': etag } }),
          412,
        );
        assertProblem(await call(base, 'PATCH', `/users/${id}?age=11`, { headers: { 'if-match': etag } }), 412);
        assertProblem(await call(base, 'DELETE', `/users/${id}`, { headers: { 'if-match': etag } }), 412);
        assertProblem(await call(base, 'DELETE', `/users/${id}`, { headers: { 'if-match': `W/${fresh}` } }), 412);
        const still = await call(base, 'GET', `/users/${id}`);
        assert.deepEqual(still.json.data, [{ name: 'Lia', age: '10', city: 'Metz' }]);
        const removed = await call(base, 'DELETE', `/users/${id}`, { headers: { 'if-match': `"nope", ${fresh}` } });
        assert.equal(removed.status, 200);
      });
    });

    it('health endpoints answer', async () => {
      assert.deepEqual((await call(base, 'GET', '/healthz')).json, { status: 'ok' });
      assert.deepEqual((await call(base, 'GET', '/readyz')).json, { status: 'ok' });
    });

    it('echoes a sane X-Request-Id and makes one up otherwise', async () => {
      const given = await call(base, 'GET', '/healthz', { headers: { 'x-request-id': 'abc-123' } });
      assert.equal(given.headers.get('x-request-id'), 'abc-123');
      const made = await call(base, 'GET', '/healthz', { headers: { 'x-request-id': 'bad id\twith spaces' } });
      assert.match(made.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    });
  });
}
