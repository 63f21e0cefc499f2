// deploy/nginx/user-records.conf as it is, with TLS, in front of three instances on one PostgreSQL
// database, each set as docs/operations.md#behind-nginx says: TRUST_PROXY nginx's address alone,
// ALLOWED_HOSTS the public name. Clients reach nginx from addresses of their own (127.0.0.2...), so
// the instances can tell them apart.
import assert from 'node:assert/strict';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { type Agent, request } from 'node:https';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, type Database } from '../helpers/backends.ts';
import { NGINX, nginxSkip, PROXY_ADDRESS, PUBLIC_NAME, type RunningNginx, startNginx } from '../helpers/nginx.ts';
import { type RunningServer, startServer, tempDir } from '../helpers/server.ts';
import { sseEvents, type SseEvent } from '../helpers/sse.ts';
import { send } from '../helpers/upgrade-load.ts';

const postgresql = BACKENDS.find((backend) => backend.name === 'postgresql');
/** Requests per minute per client, per instance: low, so that a test reaches it in a few requests. */
const RATE_LIMIT = 20;

describe(
  'nginx with TLS in front of three instances on one PostgreSQL database',
  { skip: nginxSkip || postgresql?.skip || false, timeout: 180_000 },
  () => {
    const data = tempDir();
    let database: Database;
    let servers: RunningServer[] = [];
    let proxy: RunningNginx;
    /** A client's connection to nginx from its own address, and what it asks. */
    const client = (address: string) => {
      const agent = proxy.agent({ localAddress: address });
      return {
        agent,
        send: (method: string, path: string, headers: Record<string, string> = {}) =>
          send(proxy.url, agent, method, path, { host: PUBLIC_NAME, ...headers }),
      };
    };

    before(async () => {
      database = await (postgresql as NonNullable<typeof postgresql>).fresh();
      const env = {
        DATABASE_URL: database.url,
        TRUST_PROXY: PROXY_ADDRESS,
        ALLOWED_HOSTS: PUBLIC_NAME,
        RATE_LIMIT: String(RATE_LIMIT),
      };
      servers = await Promise.all([1, 2, 3].map(() => startServer(env)));
      proxy = await startNginx(
        join(data.dir, 'nginx'),
        servers.map((server) => new URL(server.url).host),
      );
    });
    after(async () => {
      await proxy?.stop();
      for (const server of servers) await server.stop();
      await database?.drop();
      data.cleanup();
    });

    it('HTTPS with the public name; plain HTTP only points at it; another Host is refused by the instance', async () => {
      const plain = await new Promise<{ status: number; location?: string }>((resolve, reject) => {
        const req = httpRequest(
          `http://127.0.0.1:${proxy.plainPort}/users?limit=1`,
          { headers: { host: PUBLIC_NAME } },
          (res) => {
            res.resume();
            resolve({ status: res.statusCode ?? 0, location: res.headers.location });
          },
        );
        req.on('error', reject);
        req.end();
      });
      assert.deepEqual(plain, { status: 308, location: `https://${PUBLIC_NAME}/users?limit=1` });
      const anna = client('127.0.0.2');
      assert.equal((await anna.send('GET', '/healthz')).status, 200);
      const other = await anna.send('GET', '/users', { host: 'rebound.example.net' });
      assert.equal(other.status, 421, other.body);
      anna.agent.destroy();
    });

    it('the contract: POST /users with query-string input and GET /users answer {"data":[...]} of name, age, city', async () => {
      const anna = client('127.0.0.2');
      const created = await anna.send('POST', '/users?name=Ada&age=36&city=London');
      assert.equal(created.status, 200, created.body);
      assert.match(String(created.headers['content-type']), /^application\/json/);
      assert.deepEqual(JSON.parse(created.body), { data: [{ name: 'Ada', age: '36', city: 'London' }] });
      const listed = await anna.send('GET', '/users');
      assert.equal(listed.status, 200, listed.body);
      const records = (JSON.parse(listed.body) as { data: Array<Record<string, string>> }).data;
      assert.ok(records.length >= 1);
      for (const record of records) assert.deepEqual(Object.keys(record), ['name', 'age', 'city']);
      assert.ok(records.some((record) => record.name === 'Ada'));
      anna.agent.destroy();
    });

    it('a stream read through nginx gets, unbuffered and in order, the writes made through each instance', async () => {
      const events: SseEvent[] = [];
      let headers: Record<string, unknown> = {};
      const stream = request(
        `${proxy.url}/users/events`,
        { agent: proxy.agent({ localAddress: '127.0.0.2' }), headers: { host: PUBLIC_NAME } },
        (res) => {
          headers = res.headers;
          res.setEncoding('utf8').on(
            'data',
            sseEvents((event) => events.push(event)),
          );
        },
      );
      stream.on('error', () => undefined);
      stream.end();
      try {
        // Connected once its first comment (`: changes after N`) came through: that is from now.
        await waitUntil(() => headers['content-type'] !== undefined);
        assert.match(String(headers['content-type']), /^text\/event-stream/);
        assert.equal(headers['cache-control'], 'no-store');
        // Each write goes straight to one instance; the stream is served by one of them, so at least
        // two of these writes come from an instance other than the stream's.
        const names = servers.map((_, i) => `Through${i}`);
        const direct = new HttpAgent();
        for (const [i, server] of servers.entries()) {
          // fetch would not send this Host header; node:http does.
          const written = await send(server.url, direct, 'POST', `/users?name=${names[i]}&age=${i}&city=Oslo`, {
            host: PUBLIC_NAME,
          });
          assert.equal(written.status, 200, written.body);
          // Unbuffered: each event comes through before the next write is made.
          await waitUntil(() => events.some((event) => event.data?.includes(`"${names[i]}"`)));
        }
        const seen = events
          .filter((event) => event.data !== undefined)
          .map((event) => JSON.parse(event.data as string).data.name as string);
        assert.deepEqual(seen.slice(-3), names);
      } finally {
        stream.destroy();
      }
    });

    it('the rate limit is per client address, and a client cannot leave it by sending its own X-Forwarded-For', async () => {
      const [bob, carol] = [client('127.0.0.3'), client('127.0.0.4')];
      // nginx sends each request to the next instance; each counts the client on its own, so after
      // three times the limit every instance refuses it. Bounded: at most ten times the limit.
      let refused = 0;
      for (let n = 0; n < RATE_LIMIT * 10 && refused < 3; n++) {
        const answer = await bob.send('GET', '/users?limit=1');
        refused = answer.status === 429 ? refused + 1 : 0;
        if (answer.status !== 429) assert.equal(answer.status, 200, answer.body);
      }
      assert.equal(refused, 3, 'no instance refused the client past its limit');
      for (const spoofed of ['203.0.113.7', '127.0.0.9', `203.0.113.7, ${PROXY_ADDRESS}`]) {
        for (let i = 0; i < 3; i++) {
          const answer = await bob.send('GET', '/users?limit=1', { 'x-forwarded-for': spoofed });
          assert.equal(answer.status, 429, `X-Forwarded-For: ${spoofed} escaped the limit`);
        }
      }
      // Another client, through the same nginx, has its own budget.
      for (let i = 0; i < 3; i++) assert.equal((await carol.send('GET', '/users?limit=1')).status, 200);
      // The instances log each client by its own address, never by what it claimed.
      const logs = servers.flatMap((server) => server.logs);
      assert.ok(logs.some((line) => line.includes('"remoteAddress":"127.0.0.3"')));
      assert.ok(logs.some((line) => line.includes('"remoteAddress":"127.0.0.4"')));
      assert.ok(!logs.some((line) => line.includes('203.0.113.7') || line.includes('"127.0.0.9"')));
      for (const agent of [bob.agent, carol.agent] as Agent[]) agent.destroy();
    });
  },
);

if (NGINX === undefined) console.log(`# nginx tests: ${nginxSkip}`);

/** Waits until `ready()` holds, checking every 20 ms, at most 60 s; fails the test otherwise. */
async function waitUntil(ready: () => boolean): Promise<void> {
  for (let i = 0; i < 3000 && !ready(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.ok(ready(), 'waited 60 s');
}
