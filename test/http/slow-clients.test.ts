// Slow clients: many slow or idle connections do not starve normal clients, and each is cut off by
// the timeout that covers it. `npm test` runs a short attack; `npm run test:long` a long one with
// thousands of sockets.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Connection, NoAnswer } from '../helpers/client.ts';
import { createUser, rawRequest } from '../helpers/http.ts';
import { Latencies } from '../helpers/latency.ts';
import { waitFor } from '../helpers/load.ts';
import { assertNotLogged } from '../helpers/log-check.ts';
import { acceptQueue, openConnections, rssMb } from '../helpers/proc-stats.ts';
import { scaled } from '../helpers/scale.ts';
import { startServer, tempDir } from '../helpers/server.ts';
import { SLOW_KINDS, type SlowKind, type SlowOutcome, slowSocket } from '../helpers/slow-socket.ts';

const HEADERS_TIMEOUT_MS = 1000;
const REQUEST_TIMEOUT_MS = 2000;
const KEEP_ALIVE_TIMEOUT_MS = 1000;
/** app.ts checks the headers and request timeouts once a second (connectionsCheckingInterval). */
const CHECK_INTERVAL_MS = 1000;
/**
 * Node 20.20 closes an idle keep-alive socket this long after KEEP_ALIVE_TIMEOUT_MS, on purpose
 * (HTTP_SERVER_KEEP_ALIVE_TIMEOUT_BUFFER in lib/_http_server.js, not configurable there), so a
 * client that reuses the socket at the advertised `Keep-Alive: timeout=` does not race the close.
 */
const NODE_KEEP_ALIVE_BUFFER_MS = 1000;
/**
 * The timeout that covers each kind, and when it is due once the server's clock has started: the
 * headers and request timeouts are checked once a second, the keep-alive one is a timer of its own.
 * Each socket must live at least its timeout (its clock never starts after the server's, so lateness
 * cannot fail that) and be closed by the server before GIVE_UP_MS, a generous bound derived from these.
 */
const DEADLINE: Record<SlowKind, { timeout: number; due: number }> = {
  silent: { timeout: HEADERS_TIMEOUT_MS, due: HEADERS_TIMEOUT_MS + CHECK_INTERVAL_MS },
  'slow-headers': { timeout: HEADERS_TIMEOUT_MS, due: HEADERS_TIMEOUT_MS + CHECK_INTERVAL_MS },
  'slow-body': { timeout: REQUEST_TIMEOUT_MS, due: REQUEST_TIMEOUT_MS + CHECK_INTERVAL_MS },
  'idle-keep-alive': { timeout: KEEP_ALIVE_TIMEOUT_MS, due: KEEP_ALIVE_TIMEOUT_MS + NODE_KEEP_ALIVE_BUFFER_MS },
};
/**
 * A socket the server has not closed by then was not cut off by any timeout: over three times the
 * latest any kind is due (3 s), so a busy machine that runs the server's checks late cannot reach it.
 */
const GIVE_UP_MS = 3 * Math.max(...Object.values(DEADLINE).map((kind) => kind.due)) + 1000;

/** Slow sockets held open at once; each one the server closes is replaced until the attack ends. */
const SLOW_SOCKETS = scaled(300, 3000);
const ATTACK_MS = scaled(5000, 60_000);
const NORMAL_KEEP_ALIVE = 8;
const NORMAL_NEW_CONNECTION = 2;
/**
 * Normal clients' p99 under attack may exceed, by at most this, the p99 of the same clients on a
 * control server beside it that is not attacked, measured over the same seconds (so a busy machine
 * slows both). Starving normal clients behind slow ones would make them wait about as long as a slow
 * client may hold on, so the margin is the shortest of those timeouts.
 */
const NORMAL_P99_MARGIN_MS = HEADERS_TIMEOUT_MS;
const PREFIX = 'Slowcl';

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

describe('slow and idle clients', { timeout: ATTACK_MS + 60_000 }, () => {
  it(`${SLOW_SOCKETS} slow sockets at a time for ${ATTACK_MS / 1000} s: normal clients served, slow ones cut off`, async (t) => {
    const data = tempDir();
    const env = {
      RATE_LIMIT: 'off', // every client here shares one address; a per-client limit (429) is being added
      HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_TIMEOUT_MS),
    };
    // The server under attack, and a control server that gets the same normal clients and no attack.
    const [server, control] = await Promise.all([
      startServer({ DATABASE_URL: join(data.dir, 'users.db'), ...env }),
      startServer({ DATABASE_URL: join(data.dir, 'control.db'), ...env }),
    ]);
    const port = Number(new URL(server.url).port);
    try {
      const seeded = await createUser(server.url, `${PREFIX}seed`, 40, `${PREFIX}Seedtown`);
      const controlSeeded = await createUser(control.url, `${PREFIX}seed`, 40, `${PREFIX}Seedtown`);
      const sent = new Set([`${PREFIX}seed`, `${PREFIX}Seedtown`]);

      // Normal clients: keep-alive connections, and clients opening a new connection per request.
      const normal = new Latencies();
      const normalFailures: string[] = [];
      let normalRequests = 0;
      let phase: 'baseline' | 'attack' | 'done' = 'baseline';
      const baseline = new Latencies();
      const controlled = new Latencies();
      const normalClient = async (base: string, record: number, c: number, fresh: boolean) => {
        let connection = new Connection(base);
        for (let n = 0; phase !== 'done' && n < 100_000; n++) {
          if (fresh) connection = new Connection(base);
          const name = `${PREFIX}n${c}x${n}`;
          const [method, path] =
            n % 3 === 0
              ? ['POST', `/users?name=${name}&age=30&city=${PREFIX}Normalville`]
              : n % 3 === 1
                ? ['GET', `/users/${record}`]
                : ['GET', '/users?limit=10'];
          if (method === 'POST') sent.add(name);
          // The control server's clients are timed over the attack only, as the attacked one's are.
          const clock =
            base === control.url
              ? phase === 'attack'
                ? controlled
                : undefined
              : phase === 'attack'
                ? normal
                : baseline;
          if (base === server.url) normalRequests++;
          const send = () => connection.send(method, path, { timeoutMs: 15_000 });
          try {
            const reply = clock === undefined ? await send() : await clock.time(send);
            if (reply.status !== 200) normalFailures.push(`${base} ${method} ${path}: ${reply.status}`);
          } catch (error) {
            normalFailures.push(`${base} ${error instanceof NoAnswer ? error.message : String(error)}`);
          }
          if (fresh) connection.close();
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        connection.close();
      };
      sent.add(`${PREFIX}Normalville`);
      const clients = (base: string, record: number) => [
        ...Array.from({ length: NORMAL_KEEP_ALIVE }, (_, c) => normalClient(base, record, c, false)),
        ...Array.from({ length: NORMAL_NEW_CONNECTION }, (_, c) =>
          normalClient(base, record, NORMAL_KEEP_ALIVE + c, true),
        ),
      ];
      const normalRuns = [...clients(server.url, seeded), ...clients(control.url, controlSeeded)];
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const rssBefore = rssMb(server.pid);
      phase = 'attack';

      // The attack: SLOW_SOCKETS slots, each reopening its kind of slow socket until the attack ends.
      const outcomes: SlowOutcome[] = [];
      let peakConnections = 0;
      const watcher = setInterval(() => (peakConnections = Math.max(peakConnections, openConnections(port))), 200);
      const attackEnds = Date.now() + ATTACK_MS;
      const slot = async (s: number) => {
        await new Promise((resolve) => setTimeout(resolve, (s * 1000) / SLOW_SOCKETS)); // ramp over 1 s
        const kind = SLOW_KINDS[s % SLOW_KINDS.length] as SlowKind;
        for (let n = 0; Date.now() < attackEnds && n < 1000; n++) {
          // A query string of personal data on the slow requests too: it must not reach the logs either.
          const name = `${PREFIX}s${s}x${n}`;
          const path = kind === 'slow-body' ? '/users' : `/users?name=${name}&limit=1`;
          sent.add(name);
          outcomes.push(await slowSocket(port, kind, path, 200, GIVE_UP_MS));
        }
      };
      await Promise.all(Array.from({ length: SLOW_SOCKETS }, (_, s) => slot(s)));
      phase = 'done';
      await Promise.all(normalRuns);
      clearInterval(watcher);
      const rssAfter = rssMb(server.pid);
      // Bounded, generously: closing is the server's to do, and a busy machine may run it late.
      const drained = await waitFor(() => openConnections(port) === 0, 30_000);
      const left = openConnections(port);

      const byKind = new Map<SlowKind, SlowOutcome[]>(SLOW_KINDS.map((kind) => [kind, []]));
      for (const outcome of outcomes) byKind.get(outcome.kind)?.push(outcome);
      t.diagnostic(
        `slow sockets: ${outcomes.length} opened (${SLOW_SOCKETS} at a time for ${ATTACK_MS / 1000} s), ${outcomes.filter((o) => o.closedByServer).length} closed by the server; peak ${peakConnections} open connections, ${left} left after`,
      );
      for (const [kind, list] of byKind) {
        const lived = list.map((outcome) => outcome.lived).sort((a, b) => a - b);
        const statuses = new Map<number, number>();
        for (const outcome of list) statuses.set(outcome.status, (statuses.get(outcome.status) ?? 0) + 1);
        t.diagnostic(
          `  ${kind}: ${list.length}, closed ${lived[0]}-${lived.at(-1)} ms (median ${median(lived)}) after its clock started (timeout ${DEADLINE[kind].timeout} ms, due by ${DEADLINE[kind].due} ms); statuses ${JSON.stringify(Object.fromEntries(statuses))}`,
        );
      }
      t.diagnostic(
        `normal clients: ${normalRequests} requests, ${normalFailures.length} failed; baseline ${baseline.summary()}; under attack ${normal.summary()} (${normal.count} requests); the control server meanwhile ${controlled.summary()} (${controlled.count} requests)`,
      );
      t.diagnostic(`server RSS ${rssBefore.toFixed(1)} MiB before the attack, ${rssAfter.toFixed(1)} MiB after`);

      assert.deepEqual(normalFailures.slice(0, 10), [], `${normalFailures.length} normal requests failed`);
      assert.ok(normal.count >= 50, `only ${normal.count} normal requests were answered under attack`);
      assert.ok(controlled.count >= 50, `only ${controlled.count} requests were answered by the control server`);
      assert.ok(
        normal.percentile(99) < controlled.percentile(99) + NORMAL_P99_MARGIN_MS,
        `normal clients' p99 under attack: ${normal.summary()}; on the control server meanwhile: ${controlled.summary()}`,
      );
      assert.ok(outcomes.length >= SLOW_SOCKETS, `only ${outcomes.length} slow sockets ran`);
      for (const outcome of outcomes) {
        const { timeout } = DEADLINE[outcome.kind];
        const what = `${outcome.kind} socket: lived ${outcome.lived} ms, got ${JSON.stringify(outcome.received.slice(0, 200))}`;
        assert.ok(outcome.closedByServer, `${what}: not closed by the server within ${GIVE_UP_MS} ms`);
        assert.ok(outcome.lived >= timeout - 50, `${what}: closed before its ${timeout} ms timeout`);
        if (outcome.kind === 'idle-keep-alive') {
          assert.equal(outcome.status, 200, what);
          assert.equal(outcome.laterStatus, 0, `${what}: something was sent on the idle connection`);
        } else {
          // A request that timed out is told so (408 problem) before the close; never another answer.
          assert.ok(outcome.status === 408 || outcome.status === 0, what);
          if (outcome.status === 408) assert.match(outcome.received, /application\/problem\+json/, what);
        }
      }
      assert.ok(drained, `${left} connections still open on the server 30 s after the attack`);
      // Every value sent starts with PREFIX, so a log without PREFIX holds none of them; a sample of
      // whole values as well, for a readable failure.
      assertNotLogged(server.logs, [PREFIX, ...[...sent].slice(0, 300)]);
    } finally {
      await server.stop();
      await control.stop();
      data.cleanup();
    }
  });
});

describe('a flood of new connections', () => {
  it('2,000 connections opened while the server is stopped are all accepted and answered once it runs again', async (t) => {
    const data = tempDir();
    const server = await startServer({ DATABASE_URL: join(data.dir, 'users.db'), RATE_LIMIT: 'off' });
    try {
      const port = Number(new URL(server.url).port);
      const answeredAt: number[] = [];
      const statuses = new Map<number, number>();
      process.kill(server.pid, 'SIGSTOP');
      let resumedAt = 0;
      let queued = 0;
      let requests: Promise<void>[];
      try {
        // More than Node's default listen backlog (511) can hold: the rest would wait on the
        // kernel's handshake retransmits (1 s, 3 s, 7 s...) instead of the server.
        requests = Array.from({ length: 2000 }, () =>
          rawRequest(server.url, 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n', {
            // Silent while the server is stopped, which lasts as long as the queue takes to fill.
            timeoutMs: 120_000,
          }).then((answer) => {
            answeredAt.push(Date.now());
            statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          }),
        );
        // Judged by what the kernel holds rather than by the time the answers take: while the server
        // is stopped, every one of the 2,000 handshakes must complete into its accept queue (a
        // backlog of 511 holds 512; the rest would wait on retransmits). Bounded, generously.
        await waitFor(() => (queued = Math.max(queued, acceptQueue(port))) >= 2000, 30_000);
      } finally {
        process.kill(server.pid, 'SIGCONT');
        resumedAt = Date.now();
      }
      await Promise.all(requests);
      const last = Math.max(...answeredAt) - resumedAt;
      t.diagnostic(
        `${queued} connections waited in the accept queue of the stopped server; all answered within ${last} ms of it running again`,
      );
      assert.equal(queued, 2000, `only ${queued} connections got into the accept queue while the server was stopped`);
      assert.deepEqual([...statuses], [[200, 2000]]);
    } finally {
      await server.stop();
      data.cleanup();
    }
  });
});
