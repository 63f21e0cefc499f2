// Upgrades without a failed request, under 50 connections of creates and reads and two event-stream
// subscribers, for the whole upgrade and a little after: WORKERS=2 replaced by SIGHUP, and three
// instances behind deploy/nginx/ restarted one at a time (SIGTERM, start the new one, /readyz).
// Each run prints its figures (docs/operations.md#rolling-restarts quotes them).
import assert from 'node:assert/strict';
import { Agent as HttpAgent } from 'node:http';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { BACKENDS } from '../helpers/backends.ts';
import { getOnNewConnection } from '../helpers/http.ts';
import { waitFor } from '../helpers/load.ts';
import { nginxSkip, PROXY_ADDRESS, PUBLIC_NAME, startNginx } from '../helpers/nginx.ts';
import { type RunningServer, startServer, tempDir } from '../helpers/server.ts';
import { eventFigures, send, startTraffic, type Subscriber, subscribe, type Traffic } from '../helpers/upgrade-load.ts';

const CONNECTIONS = 50;
/** Bounds of the load, far past what an upgrade takes: the load is stopped once it is done. */
const MAX_REQUESTS = 50_000;
const MAX_MS = 300_000;
/** Requests after the upgrade ended, before the load stops. */
const AFTER = 200;
/** A start under this load, on two busy cores shared with other work, can take long. */
const START_MS = 180_000;
const ROOT = new URL('../..', import.meta.url).pathname;
const postgresql = BACKENDS.find((backend) => backend.name === 'postgresql');

/**
 * What the upgrade cost, checked and printed: failed requests, acknowledged creates missing from the
 * final listing or in it twice, and per subscriber the acknowledged creates it never got an event
 * for and the events it got twice.
 */
async function judge(
  name: string,
  traffic: Traffic,
  subscribers: Subscriber[],
  list: () => Promise<Array<{ id: number; name: string }>>,
): Promise<void> {
  const listed = await list();
  const counts = new Map<string, number>();
  for (const record of listed) counts.set(record.name, (counts.get(record.name) ?? 0) + 1);
  const lost = [...traffic.created.keys()].filter((key) => !counts.has(key));
  const twice = [...counts].filter(([, count]) => count > 1).map(([key]) => key);
  // The subscribers catch up with the last writes (bounded), then stop.
  await waitFor(
    () => subscribers.every((subscriber) => eventFigures(subscriber, traffic.created).missed === 0),
    60_000,
  );
  for (const subscriber of subscribers) subscriber.stop();
  const figures = subscribers.map((subscriber) => eventFigures(subscriber, traffic.created));
  const sum = (key: keyof (typeof figures)[number]) => figures.reduce((total, f) => total + f[key], 0);
  console.log(
    `# upgrade [${name}]: ${traffic.requests} requests over ${CONNECTIONS} connections (${traffic.created.size} creates acknowledged), ` +
      `${traffic.failures.length} failed, ${lost.length} acknowledged writes lost, ${twice.length} stored twice; ` +
      `${subscribers.length} subscribers: ${sum('missed')} events missed, ${sum('repeated')} repeated, ` +
      `${subscribers.reduce((total, s) => total + s.reconnects, 0)} reconnections, ` +
      `${subscribers.reduce((total, s) => total + s.failures.length, 0)} stream requests failed`,
  );
  assert.deepEqual(traffic.failures.slice(0, 10), [], `${traffic.failures.length} requests failed`);
  assert.deepEqual(lost.slice(0, 10), [], `${lost.length} acknowledged creates are not listed`);
  assert.deepEqual(twice, [], 'records stored twice');
  for (const [i, subscriber] of subscribers.entries()) {
    assert.deepEqual(subscriber.failures, [], `subscriber ${i}: stream requests failed`);
    assert.deepEqual(figures[i], { missed: 0, repeated: 0, outOfOrder: 0 }, `subscriber ${i}`);
    assert.ok(subscriber.reconnects >= 1, `subscriber ${i} was never handed over`);
  }
}

describe('upgrades without a failed request', () => {
  it(
    `WORKERS=2: SIGHUP replaces each worker under ${CONNECTIONS} connections`,
    { timeout: MAX_MS + 120_000 },
    async () => {
      const data = tempDir();
      const server = await startServer(
        { DATABASE_URL: join(data.dir, 'users.db'), WORKERS: '2', RATE_LIMIT: 'off' },
        START_MS,
      );
      const agents = Array.from({ length: CONNECTIONS }, () => new HttpAgent({ keepAlive: true, maxSockets: 1 }));
      const deadline = Date.now() + MAX_MS;
      const subscribers = [1, 2].map(() => subscribe(server.url, () => new HttpAgent(), deadline));
      const traffic = startTraffic(server.url, agents, { prefix: 'hup', maxRequests: MAX_REQUESTS, deadline });
      try {
        assert.ok(await waitFor(() => traffic.requests >= AFTER, 60_000), 'the load did not get going');
        process.kill(server.pid, 'SIGHUP');
        // Ends at the replacement's last line, or at the line saying a new worker did not start.
        const ended = () =>
          server.logs.some((line) => line.includes('replacement done') || line.includes('did not start'));
        await waitFor(ended, MAX_MS);
        const primary = server.logs.filter((line) => line.includes('"role":"primary"')).join('\n');
        assert.ok(
          server.logs.some((line) => line.includes('replacement done')),
          `the replacement did not end:\n${primary}`,
        );
        assert.ok(
          server.logs.some((line) => line.includes('"replaced":2,')),
          'not both workers were replaced',
        );
        const at = traffic.requests;
        await waitFor(() => traffic.requests >= at + AFTER, 60_000);
        await traffic.stop();
        const probe = new HttpAgent();
        await judge('WORKERS=2, SIGHUP', traffic, subscribers, async () => {
          const answer = await send(server.url, probe, 'GET', '/users?fields=id,name');
          assert.equal(answer.status, 200);
          return (JSON.parse(answer.body) as { data: Array<{ id: number; name: string }> }).data;
        });
      } finally {
        await traffic.stop();
        for (const subscriber of subscribers) subscriber.stop();
        for (const agent of agents) agent.destroy();
        assert.equal(await server.stop('SIGTERM', 60_000), 0);
        data.cleanup();
      }
    },
  );

  it(
    `three instances behind nginx on PostgreSQL, restarted one at a time under ${CONNECTIONS} connections`,
    { skip: nginxSkip || postgresql?.skip || false, timeout: MAX_MS + 120_000 },
    async () => {
      const data = tempDir();
      const database = await (postgresql as NonNullable<typeof postgresql>).fresh();
      const env = {
        DATABASE_URL: database.url,
        TRUST_PROXY: PROXY_ADDRESS,
        ALLOWED_HOSTS: PUBLIC_NAME,
        RATE_LIMIT: 'off',
        SHUTDOWN_TIMEOUT_MS: '30000',
      };
      const servers: RunningServer[] = [];
      for (let i = 0; i < 3; i++) servers.push(await startServer(env, START_MS));
      const ports = servers.map((server) => new URL(server.url).port);
      const proxy = await startNginx(
        join(data.dir, 'nginx'),
        servers.map((server) => new URL(server.url).host),
      );
      const host = { host: PUBLIC_NAME };
      const agents = Array.from({ length: CONNECTIONS }, () => proxy.agent({ localAddress: '127.0.0.2' }));
      const deadline = Date.now() + MAX_MS;
      const subscribers = [1, 2].map(() => subscribe(proxy.url, () => proxy.agent(), deadline, host));
      const traffic = startTraffic(proxy.url, agents, {
        prefix: 'roll',
        maxRequests: MAX_REQUESTS,
        deadline,
        headers: host,
      });
      try {
        assert.ok(await waitFor(() => traffic.requests >= AFTER, 60_000), 'the load did not get going');
        for (const [i, port] of ports.entries()) {
          assert.equal(await (servers[i] as RunningServer).stop('SIGTERM', 60_000), 0, `instance ${i} stopped badly`);
          const fresh = await startServer({ ...env, PORT: port }, START_MS);
          servers[i] = fresh;
          const probe = new HttpAgent();
          let ready = 0;
          for (let n = 0; n < 600 && ready !== 200; n++) {
            ready = (await send(fresh.url, probe, 'GET', '/readyz', host).catch(() => ({ status: 0 }))).status;
            if (ready !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
          }
          assert.equal(ready, 200, `instance ${i} is not ready`);
          // nginx leaves an instance that refused it alone for fail_timeout (5 s): the next one is
          // stopped once nginx sends this one requests again, so that two are serving meanwhile.
          const served = () => fresh.logs.some((line) => line.includes('"remoteAddress":"127.0.0.2"'));
          assert.ok(await waitFor(served, 60_000), `nginx sent instance ${i} nothing after its restart`);
        }
        const at = traffic.requests;
        await waitFor(() => traffic.requests >= at + AFTER, 60_000);
        await traffic.stop();
        const probe = proxy.agent();
        await judge('3 instances behind nginx, rolling restart', traffic, subscribers, async () => {
          const answer = await send(proxy.url, probe, 'GET', '/users?fields=id,name', host);
          assert.equal(answer.status, 200);
          return (JSON.parse(answer.body) as { data: Array<{ id: number; name: string }> }).data;
        });
      } finally {
        await traffic.stop();
        for (const subscriber of subscribers) subscriber.stop();
        for (const agent of agents) agent.destroy();
        await proxy.stop();
        for (const server of servers) await server.stop('SIGTERM', 60_000);
        await database.drop();
        data.cleanup();
      }
    },
  );

  it('WORKERS=2: a new worker that fails to start leaves the old ones serving, and says so; a SIGHUP after the fix replaces them', async () => {
    // The code on disk is what a replacement runs: a copy of the service of this test's own, which it breaks.
    mkdirSync(join(ROOT, '.tmp'), { recursive: true });
    const code = mkdtempSync(join(ROOT, '.tmp', 'upgrade-code-'));
    const data = tempDir();
    const built = process.env.TEST_SERVER_BUNDLE;
    if (built !== undefined) cpSync(dirname(join(ROOT, built)), code, { recursive: true });
    else
      execFileSync(process.execPath, ['scripts/build.mjs', join(code, 'server.mjs')], { cwd: ROOT, stdio: 'ignore' });
    const entry = join(code, 'server.mjs');
    const server = await startServer({ DATABASE_URL: join(data.dir, 'users.db'), WORKERS: '2' }, START_MS, [], [entry]);
    const line = (text: string) => waitFor(() => server.logs.some((logged) => logged.includes(text)), START_MS);
    try {
      const good = readFileSync(entry);
      writeFileSync(entry, 'process.exit(3);\n');
      process.kill(server.pid, 'SIGHUP');
      assert.ok(await line('the new worker did not start; the old workers keep serving'));
      for (let i = 0; i < 10; i++) assert.equal(await getOnNewConnection(server.url, '/users?limit=1'), 200);
      assert.ok(!server.logs.some((logged) => logged.includes('old worker stopped')));
      writeFileSync(entry, good);
      process.kill(server.pid, 'SIGHUP');
      assert.ok(await line('replacement done: 2 workers replaced'));
      for (let i = 0; i < 10; i++) assert.equal(await getOnNewConnection(server.url, '/users?limit=1'), 200);
    } finally {
      assert.equal(await server.stop('SIGTERM', 60_000), 0);
      rmSync(code, { recursive: true, force: true });
      data.cleanup();
    }
  });
});
