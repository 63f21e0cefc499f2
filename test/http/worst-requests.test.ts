import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Latencies } from '../helpers/latency.ts';
import { rssMb } from '../helpers/proc-stats.ts';
import { seedRecords } from '../helpers/seed.ts';
import { type RunningServer, startServer, tempDir } from '../helpers/server.ts';

// The worst requests the outside attack runs found, sent in a stream while ordinary clients read:
// a body of some 13,000 parameter names (each refusal used to copy the whole error list), listings of
// every field of every record with no limit (built whole in memory, they stalled the event loop),
// and token guesses at /metrics. Other clients' reads must keep answering 200, the server's memory
// must stay bounded. No duration is asserted: the share of 503 under attack is compared with the
// share measured without attack in the same run, and the figures are printed.

const RECORDS = 60_000;
const READ = 'read-token-worst-6d2f9b4e1a7c3058-kp';
const WRITE = 'write-token-worst-2b8e4f6a0c9d1357-mv';
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Seen {
  latencies: Latencies;
  statuses: Map<number, number>;
}

/** Ordinary clients reading one record at a time until stopped (bounded by count too). */
function readers(base: string, count: number): { stop(): Promise<Seen> } {
  const seen: Seen = { latencies: new Latencies(), statuses: new Map() };
  let running = true;
  const loops = Array.from({ length: count }, async (_, reader) => {
    for (let i = 0; running && i < 50_000; i++) {
      const id = 1 + ((reader * 7919 + i * 104_729) % RECORDS);
      const answer = await seen.latencies.time(() =>
        fetch(`${base}/users/${id}`, { headers: { authorization: `Bearer ${READ}` } }),
      );
      await answer.arrayBuffer();
      seen.statuses.set(answer.status, (seen.statuses.get(answer.status) ?? 0) + 1);
    }
  });
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return seen;
    },
  };
}

/** Attackers sending `send` in a loop until stopped (bounded by count too); returns the statuses they got. */
function attackers(count: number, send: () => Promise<Response>): { stop(): Promise<Map<number, number>> } {
  const statuses = new Map<number, number>();
  let running = true;
  const loops = Array.from({ length: count }, async () => {
    for (let i = 0; running && i < 10_000; i++) {
      const answer = await send();
      await answer.arrayBuffer();
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
    }
  });
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return statuses;
    },
  };
}

const share503 = (seen: Seen) => {
  const total = [...seen.statuses.values()].reduce((sum, n) => sum + n, 0);
  return total === 0 ? 0 : (seen.statuses.get(503) ?? 0) / total;
};

describe('a stream of the worst requests', { timeout: 180_000 }, () => {
  const data = tempDir();
  let server: RunningServer;
  const bomb = Array.from({ length: 12_500 }, (_, i) => String(i)).join('&');

  before(async () => {
    const path = join(data.dir, 'users.db');
    await seedRecords(path, RECORDS, 'w');
    // All clients share one address, so the per-client limit would only measure itself. Shedding on:
    // a request that stalls the event loop (a listing built whole, faults collected in quadratic
    // time: seconds each, as before the hardening) shows as 503s to the readers, compared below with
    // the share measured without attack. At 2 s rather than the default 500 ms: on a machine busy
    // with other work, a starved process runs half a second late now and then by itself.
    server = await startServer({
      DATABASE_URL: path,
      API_TOKENS: `read:${READ},write:${WRITE}`,
      RATE_LIMIT: 'off',
      OVERLOAD_LAG_MS: '2000',
    });
  });
  after(async () => {
    await server?.stop();
    data.cleanup();
  });

  it('a 62 KiB body of 12,500 parameter names is refused with a short answer that quotes no unbounded input', async () => {
    for (const [method, path] of [
      ['POST', '/users'],
      ['PUT', '/users/1'],
      ['PATCH', '/users/1'],
    ] as const) {
      for (const [type, body] of [
        ['application/x-www-form-urlencoded', bomb],
        [
          'application/json',
          JSON.stringify(
            Object.fromEntries(
              bomb
                .split('&')
                .slice(0, 6000)
                .map((n) => [n, 1]),
            ),
          ),
        ],
      ] as const) {
        const answer = await fetch(`${server.url}${path}`, {
          method,
          headers: { 'content-type': type, authorization: `Bearer ${WRITE}` },
          body,
        });
        const text = await answer.text();
        assert.equal(answer.status, 400, `${method} ${type}: ${text.slice(0, 200)}`);
        assert.ok(text.length < 4096, `${method} ${type}: an answer of ${text.length} bytes`);
      }
    }
    const answer = await fetch(`${server.url}/users?${bomb.slice(0, 7000)}`, {
      headers: { authorization: `Bearer ${READ}` },
    });
    const problem = (await answer.json()) as { errors: unknown[]; detail: string };
    assert.equal(answer.status, 400);
    assert.ok(problem.errors.length <= 20, `${problem.errors.length} faults listed`);
    assert.match(problem.detail, /and \d+ more|at most 50 parameters/i);
    const long = await fetch(`${server.url}/users?${'n'.repeat(5000)}=1`, {
      headers: { authorization: `Bearer ${READ}` },
    });
    const longText = await long.text();
    assert.equal(long.status, 400);
    assert.ok(!longText.includes('n'.repeat(65)), 'a parameter name was quoted back whole');
  });

  it('other clients keep reading while the worst requests stream in; memory stays bounded', async () => {
    const quiet = readers(server.url, 4);
    await pause(2000);
    const before = await quiet.stop();

    const rssBefore = rssMb(server.pid);
    let rssPeak = rssBefore;
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, rssMb(server.pid));
    }, 100);
    const attack = [
      attackers(4, () =>
        fetch(`${server.url}/users`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${WRITE}` },
          body: bomb,
        }),
      ),
      attackers(2, () =>
        fetch(`${server.url}/users?fields=id,name,age,city,createdAt,updatedAt`, {
          headers: { authorization: `Bearer ${READ}` },
        }),
      ),
      attackers(1, () => fetch(`${server.url}/users?after=0`, { headers: { authorization: `Bearer ${READ}` } })),
      attackers(2, () =>
        fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer guess-${Math.random().toString(36)}` } }),
      ),
    ];
    const busy = readers(server.url, 4);
    await pause(5000);
    const during = await busy.stop();
    const attacked = await Promise.all(attack.map((attacker) => attacker.stop()));
    clearInterval(sampler);

    console.log(
      `# worst requests: reads alone ${before.latencies.count}, ${before.latencies.summary()}, 503 share ${(share503(before) * 100).toFixed(1)}%; ` +
        `under attack ${during.latencies.count}, ${during.latencies.summary()}, 503 share ${(share503(during) * 100).toFixed(1)}%; ` +
        `attack answers ${JSON.stringify(attacked.map((statuses) => Object.fromEntries(statuses)))}; RSS ${rssBefore.toFixed(0)} → peak ${rssPeak.toFixed(0)} MiB`,
    );
    const statuses = [...during.statuses.keys()];
    assert.ok(
      statuses.every((status) => status === 200 || status === 503),
      JSON.stringify([...during.statuses]),
    );
    assert.ok(
      share503(during) <= share503(before) + 0.05,
      `reads answered 503: ${(share503(during) * 100).toFixed(1)}% under attack, ${(share503(before) * 100).toFixed(1)}% without`,
    );
    assert.ok((attacked[1]?.get(200) ?? 0) > 0, 'the full listings were answered');
    assert.ok(rssPeak - rssBefore < 150, `RSS grew ${(rssPeak - rssBefore).toFixed(0)} MiB under the listings`);
  });

  it('clients that reset mid-request, or send a malformed chunked body, are info-level events, counted in /metrics', async () => {
    const { hostname, port } = new URL(server.url);
    const before = server.logs.length;
    const reset = () =>
      new Promise<void>((resolve) => {
        const socket = connect(Number(port), hostname, () => {
          socket.write(
            `POST /users HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${WRITE}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"na`,
          );
          setTimeout(() => socket.resetAndDestroy(), 20);
        });
        socket.on('error', () => undefined);
        socket.on('close', () => resolve());
      });
    const malformed = () =>
      new Promise<void>((resolve) => {
        const socket = connect(Number(port), hostname, () => {
          socket.end(
            `POST /users HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${WRITE}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{"name"\r\n0\r\n\r\n`,
          );
        });
        socket.on('error', () => undefined);
        socket.on('data', () => undefined);
        socket.on('close', () => resolve());
      });
    for (let round = 0; round < 20; round++) await Promise.all(Array.from({ length: 10 }, reset));
    for (let round = 0; round < 5; round++) await Promise.all(Array.from({ length: 10 }, malformed));
    await pause(300);
    const lines = server.logs.slice(before).map((line) => JSON.parse(line) as { level: number; msg: string });
    const loud = lines.filter((line) => line.level >= 50);
    assert.deepEqual(loud, [], 'a client going away wrote an error-level line');
    const metrics = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${READ}` } });
    const aborted = Number(/^http_requests_aborted_total (\d+)/m.exec(await metrics.text())?.[1]);
    assert.ok(aborted >= 100, `http_requests_aborted_total is ${aborted} after 200 resets`);
    assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
  });
});
