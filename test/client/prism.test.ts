import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createUsersClient, type UsersClient } from '../../client/index.ts';
import { freePort } from '../helpers/free-port.ts';
import { waitFor } from '../helpers/load.ts';
import { type RunningServer, startServer, tempDir } from '../helpers/server.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

// Prism, a tool nobody here wrote, in front of the real service: with --errors it answers an error
// (and says why in sl-violations) for any request or answer that breaks the document.
describe('Prism (proxy --errors) in front of the service passes a typical session', () => {
  const data = tempDir();
  let server: RunningServer;
  let prism: ChildProcess | undefined;
  let client: UsersClient;
  const output: string[] = [];

  before(async () => {
    server = await startServer({ DATABASE_URL: join(data.dir, 'users.db') });
    const port = await freePort();
    prism = spawn(
      join(ROOT, 'node_modules/.bin/prism'),
      [
        'proxy',
        join(ROOT, 'client/openapi.json'),
        server.url,
        '--errors',
        '--host',
        '127.0.0.1',
        '--port',
        String(port),
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    prism.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    prism.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    const listening = await waitFor(() => output.join('').includes('Prism is listening'), 60_000);
    assert.ok(listening, `Prism did not start:\n${output.join('')}`);
    client = createUsersClient(`http://127.0.0.1:${port}`);
  });
  after(async () => {
    if (prism?.pid !== undefined && prism.exitCode === null) {
      const exited = new Promise((resolve) => prism?.once('exit', resolve));
      process.kill(prism.pid, 'SIGTERM');
      await exited;
    }
    await server?.stop();
    data.cleanup();
  });

  it('creates, lists, pages, reads, changes and deletes without a violation or a false 401', async () => {
    const answers: Array<{ what: string; status: number; violations: string | null }> = [];
    const seen = (what: string, response: Response) =>
      answers.push({ what, status: response.status, violations: response.headers.get('sl-violations') });

    for (const [name, age, city] of [
      ['Ada', 36, 'London'],
      ['Alan', 41, 'London'],
      ['Grace', 85, 'New York'],
    ] as const) {
      seen(`create ${name}`, (await client.POST('/users', { params: { query: { name, age, city } } })).response);
    }
    seen('list', (await client.GET('/users')).response);
    seen('filter', (await client.GET('/users', { params: { query: { city: 'London', fields: 'id,name' } } })).response);
    seen('sorted page', (await client.GET('/users', { params: { query: { sort: '-age', limit: 1 } } })).response);
    seen(
      'search and count',
      (await client.GET('/users', { params: { query: { q: 'ada' }, header: { prefer: 'count=exact' } } })).response,
    );
    const read = await client.GET('/users/{id}', { params: { path: { id: 1 } } });
    seen('read', read.response);
    const etag = read.response.headers.get('etag') ?? '';
    seen(
      'not modified',
      (await client.GET('/users/{id}', { params: { path: { id: 1 }, header: { 'if-none-match': etag } } })).response,
    );
    seen(
      'change',
      (
        await client.PATCH('/users/{id}', {
          params: { path: { id: 1 }, query: { city: 'Paris' }, header: { 'if-match': etag } },
        })
      ).response,
    );
    seen(
      'replace',
      (
        await client.PUT('/users/{id}', {
          params: { path: { id: 2 }, query: { name: 'Alan', age: 42, city: 'Bletchley' } },
        })
      ).response,
    );
    seen('delete', (await client.DELETE('/users/{id}', { params: { path: { id: 3 } } })).response);
    seen('missing', (await client.GET('/users/{id}', { params: { path: { id: 3 } } })).response);
    seen('probe', (await client.GET('/healthz')).response);

    const expected = [200, 200, 200, 200, 200, 200, 200, 200, 304, 200, 200, 200, 404, 200];
    assert.deepEqual(
      answers.map((answer) => answer.status),
      expected,
      JSON.stringify(answers, null, 1),
    );
    assert.deepEqual(
      answers.filter((answer) => answer.violations !== null),
      [],
      'Prism found answers that break the document',
    );
  });
});
