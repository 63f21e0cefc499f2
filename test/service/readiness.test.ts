// Readiness that means it: once SIGTERM arrives, /readyz answers 503 while the service still serves
// everything else for SHUTDOWN_DELAY_MS (so a balancer probing it moves away before connections are
// refused), and requests in flight finish. Each case runs a real server process on SQLite.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { describe, it } from 'node:test';
import { Connection, NoAnswer } from '../helpers/client.ts';
import { slowBodyPost } from '../helpers/in-flight.ts';
import { waitFor } from '../helpers/load.ts';
import { type RunningServer, startServer, tempDir } from '../helpers/server.ts';
import { sseEvents, type SseEvent } from '../helpers/sse.ts';

/** Longer than any test: the wait is ended by a second signal, never by the clock. */
const LONG_DELAY_MS = '600000';

/** `GET path` on a new connection: its status and content type, or why nothing came back. */
async function fresh(url: string, path: string, method = 'GET'): Promise<string> {
  const connection = new Connection(url);
  try {
    const reply = await connection.send(method, path, { timeoutMs: 10_000 });
    return `${reply.status} ${String(reply.headers['content-type']).split(';')[0]}`;
  } catch (error) {
    return error instanceof NoAnswer ? error.message.replace(/^.*?: /, '') : String(error);
  } finally {
    connection.close();
  }
}

/** An open event stream, its events gathered as they come; `ended` settles when the server ends it. */
function openStream(url: string): { events: SseEvent[]; opened: Promise<number>; ended: Promise<void> } {
  const events: SseEvent[] = [];
  let ended: () => void = () => undefined;
  const opened = new Promise<number>((resolve, reject) => {
    const req = request(`${url}/users/events`, { agent: false }, (res) => {
      resolve(res.statusCode ?? 0);
      res.setEncoding('utf8').on(
        'data',
        sseEvents((event) => events.push(event)),
      );
      res.on('close', () => ended());
    });
    req.on('error', reject);
    req.end();
  });
  return { events, opened, ended: new Promise((resolve) => (ended = resolve)) };
}

async function logged(server: RunningServer, message: string): Promise<void> {
  assert.ok(await waitFor(() => server.logs.some((line) => line.includes(message)), 30_000), `no '${message}' logged`);
}

describe('readiness while the service stops', { timeout: 120_000 }, () => {
  it('SIGTERM with SHUTDOWN_DELAY_MS: /readyz 503 on new connections, everything else served, in-flight requests finish, exit 0', async () => {
    const data = tempDir();
    const server = await startServer({
      DATABASE_URL: `${data.dir}/users.db`,
      SHUTDOWN_DELAY_MS: LONG_DELAY_MS,
      SHUTDOWN_TIMEOUT_MS: '30000',
    });
    try {
      const stream = openStream(server.url);
      assert.equal(await stream.opened, 200);
      const post = slowBodyPost(server.url, { name: 'Slow', age: '40', city: 'Oslo' });
      await post.started;
      // A round trip after the slow request's headers were sent: the server has read them by now.
      assert.equal(await fresh(server.url, '/readyz'), '200 application/json');

      process.kill(server.pid, 'SIGTERM');
      await logged(server, 'draining');
      // The delay: not ready, yet serving, on new connections as on old ones.
      assert.equal(await fresh(server.url, '/readyz'), '503 application/problem+json');
      assert.equal(await fresh(server.url, '/healthz'), '200 application/json');
      assert.equal(await fresh(server.url, '/users'), '200 application/json');
      assert.equal(await fresh(server.url, '/users?name=During&age=1&city=Delay', 'POST'), '200 application/json');
      assert.ok(await waitFor(() => stream.events.some((event) => event.event === 'user.created'), 30_000));
      assert.ok(!server.logs.some((line) => line.includes('shutting down')), 'closed before the delay ended');

      // A second SIGTERM ends the wait: the listener closes, the slow body still finishes.
      const exited = server.stop('SIGTERM', 60_000);
      await logged(server, 'shutting down');
      assert.match(await fresh(server.url, '/readyz'), /ECONNREFUSED|^503 application\/problem\+json/);
      post.finish();
      const outcome = await post.done;
      assert.deepEqual([outcome.status, outcome.complete], [200, true]);
      await stream.ended;
      assert.equal(await exited, 0);
    } finally {
      await server.stop('SIGKILL');
      data.cleanup();
    }
  });

  // Without a delay (the default), and on SIGINT whatever the delay: the listener closes at once.
  for (const { name, env, signal } of [
    { name: 'SIGTERM, SHUTDOWN_DELAY_MS=0 (the default)', env: {}, signal: 'SIGTERM' as const },
    { name: 'SIGINT with SHUTDOWN_DELAY_MS set', env: { SHUTDOWN_DELAY_MS: LONG_DELAY_MS }, signal: 'SIGINT' as const },
  ]) {
    it(`${name}: stops taking connections at once, finishes the request in flight, exit 0`, async () => {
      const data = tempDir();
      const server = await startServer({ DATABASE_URL: `${data.dir}/users.db`, ...env });
      try {
        const post = slowBodyPost(server.url, { name: 'Slow', age: '40', city: 'Oslo' });
        await post.started;
        // A round trip after the slow request's headers were sent: the server has read them by now.
        assert.equal(await fresh(server.url, '/readyz'), '200 application/json');
        const exited = server.stop(signal, 60_000);
        await logged(server, 'shutting down');
        assert.ok(!server.logs.some((line) => line.includes('draining')));
        assert.match(await fresh(server.url, '/readyz'), /ECONNREFUSED|^503 application\/problem\+json/);
        post.finish();
        assert.equal((await post.done).status, 200);
        assert.equal(await exited, 0);
      } finally {
        await server.stop('SIGKILL');
        data.cleanup();
      }
    });
  }

  it('SIGHUP to a single process is logged and ignored: it goes on serving, and stops cleanly after', async () => {
    const data = tempDir();
    const server = await startServer({ DATABASE_URL: `${data.dir}/users.db` });
    try {
      process.kill(server.pid, 'SIGHUP');
      await logged(server, 'SIGHUP ignored: one process cannot replace itself');
      assert.equal(await fresh(server.url, '/users'), '200 application/json');
      assert.equal(await server.stop('SIGTERM', 60_000), 0);
    } finally {
      await server.stop('SIGKILL');
      data.cleanup();
    }
  });
});
