import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createUsersClient, nextPage, type UsersClient } from '../../client/index.ts';
import { generatedClient } from '../../scripts/generate-client.ts';
import { type RunningServer, startServer, tempDir } from '../helpers/server.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

describe('the typed client', () => {
  it('is generated from the document the service serves (npm run client writes it again)', async () => {
    const { document, schema } = await generatedClient();
    assert.equal(readFileSync(join(ROOT, 'client/openapi.json'), 'utf8'), document, 'client/openapi.json is stale');
    assert.equal(readFileSync(join(ROOT, 'client/schema.ts'), 'utf8'), schema, 'client/schema.ts is stale');
  });

  it('refuses at compile time what the service refuses: a create without age, text for a number', () => {
    // test/client/client-types.ts without its @ts-expect-error marks: each marked line must be an error.
    const scratch = tempDir('user-records-client-types-');
    try {
      const source = readFileSync(join(ROOT, 'test/client/client-types.ts'), 'utf8')
        .replaceAll('// @ts-expect-error', '//')
        .replaceAll("'../../client/index.ts'", `'${join(ROOT, 'client/index.ts')}'`);
      const file = join(scratch.dir, 'unmarked.ts');
      writeFileSync(file, source);
      const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
      let output = '';
      try {
        execFileSync(
          process.execPath,
          [
            tsc,
            '--noEmit',
            '--strict',
            '--skipLibCheck',
            '--allowImportingTsExtensions',
            '--module',
            'NodeNext',
            '--moduleResolution',
            'NodeNext',
            '--target',
            'ES2022',
            '--types',
            'node',
            '--typeRoots',
            join(ROOT, 'node_modules/@types'),
            file,
          ],
          { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' },
        );
      } catch (error) {
        output = String((error as { stdout?: string }).stdout ?? '');
      }
      const lines = new Set([...output.matchAll(/unmarked\.ts\((\d+),\d+\): error/g)].map((match) => Number(match[1])));
      const marked = readFileSync(join(ROOT, 'test/client/client-types.ts'), 'utf8')
        .split('\n')
        .flatMap((line, i) => (line.includes('@ts-expect-error') ? [i + 2] : []));
      assert.ok(marked.length >= 4);
      for (const line of marked) assert.ok(lines.has(line), `line ${line} compiled:\n${output}`);
      assert.match(output, /age/, output);
    } finally {
      scratch.cleanup();
    }
  });
});

describe('the typed client against the real server', () => {
  const data = tempDir();
  let server: RunningServer;
  let client: UsersClient;
  before(async () => {
    server = await startServer({ DATABASE_URL: join(data.dir, 'users.db') });
    client = createUsersClient(server.url);
  });
  after(async () => {
    await server?.stop();
    data.cleanup();
  });

  it('creates, lists with filters and pages, reads, updates with If-Match, deletes, and reads the errors', async () => {
    const people = [
      { name: 'Ada', age: 36, city: 'London' },
      { name: 'Alan', age: 41, city: 'London' },
      { name: 'Grace', age: 85, city: 'New York' },
      { name: 'Edsger', age: 72, city: 'Nuenen' },
    ];
    const ids: number[] = [];
    for (const person of people) {
      const { data, response } = await client.POST('/users', { params: { query: { ...person, fields: 'id,name' } } });
      assert.equal(response.status, 200);
      const id = data?.data[0]?.id;
      assert.ok(typeof id === 'number');
      assert.equal(response.headers.get('location'), `/users/${id}`);
      ids.push(id);
    }

    const london = await client.GET('/users', { params: { query: { city: 'London' } } });
    assert.deepEqual(london.data, { data: people.slice(0, 2).map((p) => ({ ...p, age: String(p.age) })) });

    // Sorted pages of one, followed through the Link cursor to the end.
    const names: string[] = [];
    let query: Record<string, string | number> = {};
    for (let pages = 0; pages < 10; pages++) {
      const page = await client.GET('/users', {
        params: { query: { sort: '-age', limit: 1, 'age.gte': 40, fields: 'name', ...query } },
      });
      names.push(...(page.data?.data ?? []).map((user) => String(user.name)));
      const next = nextPage(page.response.headers.get('link'));
      if (next === undefined) break;
      query = next;
    }
    assert.deepEqual(names, ['Grace', 'Edsger', 'Alan']);

    const [first] = ids as [number];
    const read = await client.GET('/users/{id}', { params: { path: { id: first } } });
    assert.deepEqual(read.data, { data: [{ name: 'Ada', age: '36', city: 'London' }] });
    const etag = read.response.headers.get('etag') ?? '';
    const changed = await client.PATCH('/users/{id}', {
      params: { path: { id: first }, query: { city: 'Cambridge' }, header: { 'if-match': etag } },
    });
    assert.equal(changed.response.status, 200);
    const stale = await client.PATCH('/users/{id}', {
      params: { path: { id: first }, query: { age: 37 }, header: { 'if-match': etag } },
    });
    assert.equal(stale.response.status, 412);
    assert.equal(stale.error?.type, '/problems/precondition-failed');

    const gone = await client.DELETE('/users/{id}', { params: { path: { id: first } } });
    assert.equal(gone.response.status, 200);
    const missing = await client.GET('/users/{id}', { params: { path: { id: first } } });
    assert.equal(missing.response.status, 404);
    assert.equal(missing.error?.type, '/problems/not-found');

    // What the types allow but the rules refuse still comes back as a typed problem.
    const blank = await client.POST('/users', { params: { query: { name: ' ', age: 1, city: 'X' } } });
    assert.equal(blank.response.status, 400);
    assert.deepEqual(
      blank.error?.errors?.map((error) => error.parameter),
      ['name'],
    );
  });
});
