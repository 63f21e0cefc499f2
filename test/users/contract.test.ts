import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { before, describe, it } from 'node:test';
import { BACKENDS } from '../helpers/backends.ts';
import { call } from '../helpers/http.ts';
import { BUNDLE, serverForSuite } from '../helpers/server.ts';

// The original contract, byte for byte, against the real server over HTTP, as existing clients use
// it: on each store, served by one process and by two workers sharing the port.
for (const backend of BACKENDS) {
  for (const workers of [1, 2]) {
    describe(`the original contract [${backend.name}, WORKERS=${workers}]`, { skip: backend.skip }, () => {
      contract(serverForSuite({ WORKERS: String(workers) }, backend));
    });
  }
}

// And once as `npm start` runs it: the bundle that `npm run build` makes.
describe('the original contract [sqlite, npm start bundle]', () => {
  before(() => {
    execFileSync(process.execPath, ['scripts/build.mjs', ...BUNDLE], { stdio: 'pipe' });
  });
  contract(serverForSuite({}, undefined, BUNDLE));
});

function contract(server: { readonly url: string }): void {
  it('GET /users on an empty store answers 200 {"data":[]}', async () => {
    const answer = await call(server.url, 'GET', '/users');
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(answer.text, '{"data":[]}');
  });

  it('POST /users with the query string answers 200 with exactly the stored record', async () => {
    const answer = await call(server.url, 'POST', '/users?name=Alice&age=30&city=Paris');
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(answer.text, '{"data":[{"name":"Alice","age":"30","city":"Paris"}]}');
  });

  it('keeps records in creation order, the newest last, each with exactly name, age, city as strings', async () => {
    const names = ['Bob', 'Chloé', 'Dmitri 李'];
    for (const [i, name] of names.entries()) {
      const query = new URLSearchParams({ name, age: String(40 + i), city: 'Zürich' });
      const created = await call(server.url, 'POST', `/users?${query}`);
      assert.equal(created.status, 200);
      const list = await call(server.url, 'GET', '/users');
      assert.deepEqual(list.json.data.at(-1), { name, age: String(40 + i), city: 'Zürich' });
    }
    const list = await call(server.url, 'GET', '/users');
    assert.deepEqual(Object.keys(list.json), ['data']);
    assert.deepEqual(
      list.json.data.map((record: { name: string }) => record.name),
      ['Alice', ...names],
    );
    for (const record of list.json.data) {
      assert.deepEqual(Object.keys(record), ['name', 'age', 'city']);
      for (const value of Object.values(record)) assert.equal(typeof value, 'string');
    }
  });

  it('stores a value exactly as sent, percent-encoding and plus signs decoded', async () => {
    const answer = await call(server.url, 'POST', '/users?name=Mary+Ann%20O%27Neil&age=7&city=S%C3%A3o%20Paulo');
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.json, { data: [{ name: "Mary Ann O'Neil", age: '7', city: 'São Paulo' }] });
  });
}
