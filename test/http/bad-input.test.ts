import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { appForSuite } from '../helpers/app.ts';
import { assertProblem, call, createUser, rawRequest } from '../helpers/http.ts';
import { BACKENDS } from '../helpers/backends.ts';
import { runScenarios, type Scenario } from '../helpers/scenario.ts';

interface Row {
  name: string;
  method?: string;
  /** `:id` stands for a stored record's id. */
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** Parameters the problem's `errors` must name (exactly), when fields are at fault. */
  parameters?: string[];
}

const JSON_TYPE = { 'content-type': 'application/json' };
const FORM_TYPE = { 'content-type': 'application/x-www-form-urlencoded' };
const long = 'x'.repeat(201);

// Each row must answer 400 in the problem-details shape and leave the stored data untouched.
const rows: Row[] = [
  { name: 'no parameters at all', path: '/users', parameters: ['name', 'age', 'city'] },
  { name: 'missing city', path: '/users?name=A&age=1', parameters: ['city'] },
  { name: 'empty name', path: '/users?name=&age=1&city=B', parameters: ['name'] },
  { name: 'blank name', path: '/users?name=%20%20%09&age=1&city=B', parameters: ['name'] },
  { name: 'name of 201 characters', path: `/users?name=${long}&age=1&city=B`, parameters: ['name'] },
  { name: 'city of 201 characters', path: `/users?name=A&age=1&city=${long}`, parameters: ['city'] },
  { name: 'age not a number', path: '/users?name=A&age=abc&city=B', parameters: ['age'] },
  { name: 'age empty', path: '/users?name=A&age=&city=B', parameters: ['age'] },
  { name: 'age negative', path: '/users?name=A&age=-1&city=B', parameters: ['age'] },
  { name: 'age above 150', path: '/users?name=A&age=151&city=B', parameters: ['age'] },
  { name: 'age with a fraction', path: '/users?name=A&age=30.5&city=B', parameters: ['age'] },
  { name: 'age in exponent form', path: '/users?name=A&age=1e2&city=B', parameters: ['age'] },
  { name: 'age with spaces', path: '/users?name=A&age=%2030&city=B', parameters: ['age'] },
  { name: 'age in non-ASCII digits', path: '/users?name=A&age=%D9%A3&city=B', parameters: ['age'] },
  { name: 'every field bad at once', path: '/users?name=&age=999&city=', parameters: ['name', 'age', 'city'] },
  { name: 'repeated name', path: '/users?name=A&name=B&age=1&city=C', parameters: ['name'] },
  { name: 'unknown parameter', path: '/users?name=A&age=1&city=C&email=x', parameters: ['email'] },
  { name: 'prototype key as parameter', path: '/users?name=A&age=1&city=C&__proto__=x', parameters: ['__proto__'] },
  { name: 'control character in name', path: '/users?name=A%00B&age=1&city=C', parameters: ['name'] },
  { name: 'newline in city', path: '/users?name=A&age=1&city=Li%0Ane', parameters: ['city'] },
  { name: 'C1 control character', path: '/users?name=A%C2%85&age=1&city=C', parameters: ['name'] },
  { name: 'malformed percent-escape', path: '/users?name=A%ZZ&age=1&city=C', parameters: ['name'] },
  { name: 'truncated percent-escape', path: '/users?name=A&age=1&city=C%4', parameters: ['city'] },
  { name: 'percent-encoded invalid UTF-8', path: '/users?name=%C3%28&age=1&city=C', parameters: ['name'] },
  { name: 'percent-encoded lone surrogate', path: '/users?name=%ED%A0%80&age=1&city=C', parameters: ['name'] },
  { name: 'unknown fields name', path: '/users?name=A&age=1&city=C&fields=id,email', parameters: ['fields'] },
  { name: 'empty fields', path: '/users?name=A&age=1&city=C&fields=', parameters: ['fields'] },
  {
    name: 'JSON body missing age',
    path: '/users',
    headers: JSON_TYPE,
    body: '{"name":"A","city":"C"}',
    parameters: ['age'],
  },
  {
    name: 'JSON wrong types',
    path: '/users',
    headers: JSON_TYPE,
    body: '{"name":5,"age":"30","city":["C"]}',
    parameters: ['name', 'city'],
  },
  {
    name: 'JSON age as a fraction',
    path: '/users',
    headers: JSON_TYPE,
    body: '{"name":"A","age":30.5,"city":"C"}',
    parameters: ['age'],
  },
  {
    name: 'JSON age as a boolean',
    path: '/users',
    headers: JSON_TYPE,
    body: '{"name":"A","age":true,"city":"C"}',
    parameters: ['age'],
  },
  {
    name: 'JSON null name',
    path: '/users',
    headers: JSON_TYPE,
    body: '{"name":null,"age":1,"city":"C"}',
    parameters: ['name'],
  },
  {
    name: 'JSON nested object',
    path: '/users',
    headers: JSON_TYPE,
    body: '{"name":{"a":1},"age":1,"city":"C"}',
    parameters: ['name'],
  },
  {
    name: 'JSON lone surrogate',
    path: '/users',
    headers: JSON_TYPE,
    body: '{"name":"\\ud800","age":1,"city":"C"}',
    parameters: ['name'],
  },
  {
    name: 'JSON unknown key',
    path: '/users',
    headers: JSON_TYPE,
    body: '{"name":"A","age":1,"city":"C","x":1}',
    parameters: ['x'],
  },
  // An array is a batch of records (batch-create.test.ts), refused when one of them is bad.
  {
    name: 'JSON array body with a bad record',
    path: '/users',
    headers: JSON_TYPE,
    body: '[{"name":"A","age":1,"city":"C"},{"name":"A","age":1,"city":"C","x":1}]',
    parameters: ['/1/x'],
  },
  { name: 'JSON string body', path: '/users', headers: JSON_TYPE, body: '"name=A"' },
  { name: 'JSON null body', path: '/users', headers: JSON_TYPE, body: 'null' },
  { name: 'JSON syntax error', path: '/users', headers: JSON_TYPE, body: '{"name":"A",' },
  {
    name: 'JSON __proto__ key',
    path: '/users',
    headers: JSON_TYPE,
    body: '{"__proto__":{"admin":true},"name":"A","age":1,"city":"C"}',
  },
  {
    name: 'JSON constructor.prototype key',
    path: '/users',
    headers: JSON_TYPE,
    body: '{"constructor":{"prototype":{"x":1}},"name":"A","age":1,"city":"C"}',
  },
  {
    name: 'form body malformed escape',
    path: '/users',
    headers: FORM_TYPE,
    body: 'name=A%G1&age=1&city=C',
    parameters: ['name'],
  },
  {
    name: 'form body repeated age',
    path: '/users',
    headers: FORM_TYPE,
    body: 'name=A&age=1&age=2&city=C',
    parameters: ['age'],
  },
  {
    name: 'wrong content type',
    path: '/users',
    headers: { 'content-type': 'text/plain' },
    body: 'name=A&age=1&city=C',
  },
  { name: 'XML body', path: '/users', headers: { 'content-type': 'application/xml' }, body: '<user name="A"/>' },
  {
    name: 'both query and body, overlapping',
    path: '/users?name=A&age=1',
    headers: JSON_TYPE,
    body: '{"age":2,"city":"C"}',
    parameters: ['name', 'age'],
  },
  {
    name: 'input split between query and body',
    path: '/users?name=A&city=C',
    headers: JSON_TYPE,
    body: '{"age":2}',
    parameters: ['name', 'city'],
  },
  {
    name: 'query input with an empty JSON object body',
    path: '/users?name=A&age=1&city=C',
    headers: JSON_TYPE,
    body: '{}',
    parameters: ['name', 'age', 'city'],
  },
  {
    name: 'query input with a form body',
    path: '/users?name=A&age=1&city=C',
    headers: FORM_TYPE,
    body: 'x=1',
    parameters: ['name', 'age', 'city', 'x'],
  },
  {
    name: 'fields inside the body',
    path: '/users',
    headers: JSON_TYPE,
    body: '{"name":"A","age":1,"city":"C","fields":"id"}',
    parameters: ['fields'],
  },
  {
    name: 'JSON key given twice',
    path: '/users',
    headers: JSON_TYPE,
    body: '{"name":"a","name":"b","age":3,"city":"x"}',
    parameters: ['name'],
  },
  {
    name: 'JSON key given twice, nested keys are not confused with it',
    path: '/users',
    headers: JSON_TYPE,
    body: '{"city":{"city":1,"x":[{"city":2}]},"name":"a","age":3,"city":"x"}',
    parameters: ['city'],
  },
  {
    name: 'malformed and invalid parameters reported together',
    path: '/users?name=%ZZ&age=x&city=&email=1',
    parameters: ['name', 'age', 'city', 'email'],
  },
  { name: 'PUT missing a field', method: 'PUT', path: '/users/:id?name=A&age=1', parameters: ['city'] },
  { name: 'PUT age out of range', method: 'PUT', path: '/users/:id?name=A&age=200&city=C', parameters: ['age'] },
  { name: 'PATCH with no field', method: 'PATCH', path: '/users/:id', parameters: ['name', 'age', 'city'] },
  { name: 'PATCH blank city', method: 'PATCH', path: '/users/:id?city=%20', parameters: ['city'] },
  {
    name: 'PATCH unknown parameter and no field',
    method: 'PATCH',
    path: '/users/:id?nickname=x',
    parameters: ['nickname', 'name', 'age', 'city'],
  },
  { name: 'PATCH JSON not an object', method: 'PATCH', path: '/users/:id', headers: JSON_TYPE, body: '[]' },
  { name: 'DELETE unknown parameter', method: 'DELETE', path: '/users/:id?force=1', parameters: ['force'] },
  { name: 'list: limit zero', method: 'GET', path: '/users?limit=0', parameters: ['limit'] },
  { name: 'list: limit above 1000', method: 'GET', path: '/users?limit=1001', parameters: ['limit'] },
  { name: 'list: after not a number', method: 'GET', path: '/users?after=x', parameters: ['after'] },
  { name: 'list: bad age filter', method: 'GET', path: '/users?age=old', parameters: ['age'] },
  { name: 'list: unknown filter', method: 'GET', path: '/users?colour=red', parameters: ['colour'] },
  { name: 'list: sort by an unknown field', method: 'GET', path: '/users?sort=password', parameters: ['sort'] },
  { name: 'list: sort by a field twice', method: 'GET', path: '/users?sort=age,-age', parameters: ['sort'] },
  { name: 'list: range bound not a number', method: 'GET', path: '/users?age.gt=old', parameters: ['age.gt'] },
  {
    name: 'list: a date that does not exist',
    method: 'GET',
    path: '/users?createdAt.gte=2026-02-30T00:00:00Z',
    parameters: ['createdAt.gte'],
  },
  { name: 'list: search with a control character', method: 'GET', path: '/users?q=a%00b', parameters: ['q'] },
  { name: 'list: a cursor without sort', method: 'GET', path: '/users?cursor=abc', parameters: ['cursor'] },
  { name: 'list: a cursor of nothing', method: 'GET', path: '/users?sort=age&cursor=abc', parameters: ['cursor'] },
  { name: 'list: after with sort', method: 'GET', path: '/users?sort=age&after=3', parameters: ['after'] },
  { name: 'read one: unknown fields', method: 'GET', path: '/users/:id?fields=password', parameters: ['fields'] },
];

// In process (buildApp, app.inject) on each store; over the app's socket where the HTTP parser decides.
for (const backend of BACKENDS) {
  describe(
    `bad input is refused with 400 problem details and stores nothing [${backend.name}]`,
    { skip: backend.skip },
    () => {
      const suite = appForSuite({}, backend);
      let id: number;
      const snapshot = async () =>
        (await call(suite.current.app, 'GET', '/users?fields=id,name,age,city,updatedAt')).text;

      before(async () => {
        id = await createUser(suite.current.app, 'Keeper', 42, 'Stays');
      });

      runScenarios(
        () => suite.current,
        rows.map((row): Scenario => {
          let stored = '';
          return {
            name: row.name,
            method: row.method ?? 'POST',
            url: () => row.path.replace(':id', String(id)),
            headers: row.headers,
            body: row.body,
            expectedStatus: 400,
            expectedProblem: { parameters: row.parameters },
            before: async () => {
              stored = await snapshot();
            },
            after: async () => assert.equal(await snapshot(), stored, 'stored data changed'),
          };
        }),
      );

      it('raw non-ASCII bytes in the URL (not percent-encoded) are refused by the HTTP parser', async () => {
        for (const bytes of [Buffer.from([0xff, 0xfe]), Buffer.from('Zoë', 'utf8')]) {
          const before = await snapshot();
          const head = Buffer.concat([
            Buffer.from('POST /users?name=A'),
            bytes,
            Buffer.from('&age=1&city=C HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: 0\r\n\r\n'),
          ]);
          const answer = await rawRequest(suite.current.url, head);
          assert.equal(answer.status, 400);
          assert.equal(JSON.parse(answer.body).type, '/problems/malformed-request');
          assert.equal(await snapshot(), before);
        }
      });

      it('a form body with raw UTF-8 is read as UTF-8, raw invalid bytes are refused', async () => {
        const { app } = suite.current;
        const good = await call(app, 'POST', '/users', { headers: FORM_TYPE, body: 'name=Zoë&age=1&city=Łódź' });
        assert.equal(good.status, 200, good.text);
        assert.deepEqual(good.json, { data: [{ name: 'Zoë', age: '1', city: 'Łódź' }] });
        const before = await snapshot();
        const bad = await call(app, 'POST', '/users', {
          headers: FORM_TYPE,
          body: Buffer.concat([Buffer.from('name=A'), Buffer.from([0xc3, 0x28]), Buffer.from('&age=1&city=C')]),
        });
        assert.equal(bad.status, 400);
        assert.deepEqual(bad.json.errors, [{ parameter: 'name', detail: 'is not correctly percent-encoded UTF-8' }]);
        assert.equal(await snapshot(), before);
      });

      it('a malformed escape in the path answers 400 problem details', async () => {
        assertProblem(await call(suite.current.app, 'GET', '/users/%E0%A4%A'), 400);
      });

      it('the record the table tried to change is as it was', async () => {
        const answer = await call(suite.current.app, 'GET', `/users/${id}`);
        assert.deepEqual(answer.json, { data: [{ name: 'Keeper', age: '42', city: 'Stays' }] });
      });
    },
  );
}
