// Shutdown: SIGTERM under mixed load, with slow requests in flight, finishes what is in flight,
// loses no answered write, refuses new connections and exits 0 within its SHUTDOWN_TIMEOUT_MS. `npm test` runs it on a
// modest table; `npm run test:long` on a bigger one with more writers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BACKENDS } from '../helpers/backends.ts';
import { Connection, NoAnswer } from '../helpers/client.ts';
import { call } from '../helpers/http.ts';
import { type InFlightOutcome, pausedRead, slowBodyPost } from '../helpers/in-flight.ts';
import { waitFor } from '../helpers/load.ts';
import { assertNotLogged } from '../helpers/log-check.ts';
import { scaled } from '../helpers/scale.ts';
import { seedRecords } from '../helpers/seed.ts';
import { startServer } from '../helpers/server.ts';
import { checkLedger, type Shown, startLedgerWriters } from '../helpers/write-ledger.ts';

// The service's own bound on a stop, which the slow listings below must finish within. 8 s was
// passed by 0.4 s in a CI run beside another Node line's tests (four 5 MB listings to paused
// readers, 24 writers); a stop that hangs still meets this bound and fails.
const SHUTDOWN_TIMEOUT_MS = 20_000;
/**
 * Records in the table. On SQLite the full listing (~62 bytes a record, ~5 MB) is more than the
 * loopback socket buffers take in while its reader pauses, so the server is still sending it at
 * SIGTERM. Seeding PostgreSQL through the store is slower (~3k records/s), so its short form keeps
 * a small table and only the long form lists a big one.
 */
const TABLE = { sqlite: scaled(80_000, 150_000), postgresql: scaled(5000, 100_000) } as const;
const WRITERS = scaled(24, 64);
/** Writes answered before the SIGTERM. */
const WRITES_BEFORE = scaled(300, 5000);
const SLOW_READERS = 4;
const SLOW_POSTS = 4;
/** How long the slow readers stop reading, and when the slow bodies are finished, after SIGTERM. */
const READER_PAUSE_MS = 1500;
const BODY_REST_AFTER_MS = 800;
const PREFIX = 'Shutdn';

/** A request in flight at SIGTERM ended acceptably: answered whole, or refused cleanly. */
function judgeInFlight(what: string, outcome: InFlightOutcome): string | undefined {
  if (outcome.status === 0) return undefined; // closed before any answer: the client knows to retry
  if (!outcome.complete) return `${what}: a ${outcome.status} answer cut short after ${outcome.body.length} bytes`;
  if (outcome.status === 200) return undefined;
  if (outcome.status === 503 && outcome.contentType.startsWith('application/problem+json')) return undefined;
  return `${what}: ${outcome.status} ${outcome.contentType} ${outcome.body.slice(0, 200)}`;
}

for (const backend of BACKENDS) {
  describe(`shutdown under load [${backend.name}]`, { skip: backend.skip, timeout: scaled(300_000, 600_000) }, () => {
    it('SIGTERM: in-flight requests finish or are refused cleanly, no answered write lost, exit 0 in time', async (t) => {
      const database = await backend.fresh();
      const env = { DATABASE_URL: database.url, RATE_LIMIT: 'off', SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS) };
      // RATE_LIMIT off: every client here shares one address, and a per-client limit (429) is being added.
      const seeding = Date.now();
      await seedRecords(database.url, TABLE[backend.name], PREFIX);
      const seeded = Date.now() - seeding;
      const server = await startServer(env);
      let restarted: Awaited<ReturnType<typeof startServer>> | undefined;
      try {
        const writers = startLedgerWriters(server.url, WRITERS, PREFIX);
        const going = await waitFor(() => writers.ledger.writes >= WRITES_BEFORE, 20_000);
        assert.ok(going, `only ${writers.ledger.writes} writes answered in 20 s`);

        // Slow requests in flight at the signal: full listings read slowly, bodies still arriving.
        const readers = Array.from({ length: SLOW_READERS }, () => pausedRead(server.url, '/users', READER_PAUSE_MS));
        const posts = Array.from({ length: SLOW_POSTS }, (_, i) =>
          slowBodyPost(server.url, { name: `${PREFIX}slow${i}`, age: '33', city: `${PREFIX}Slowtown` }),
        );
        await Promise.all([...readers, ...posts].map((request) => request.started));

        const signalled = Date.now();
        // The server exits 1 by itself once SHUTDOWN_TIMEOUT_MS has passed; the test's own kill only
        // backs that up, late enough that a busy machine cannot reach it first.
        const exited = server.stop('SIGTERM', SHUTDOWN_TIMEOUT_MS + 30_000);
        setTimeout(() => posts.forEach((post) => post.finish()), BODY_REST_AFTER_MS);
        const noticed = await waitFor(
          () => server.logs.some((line) => line.includes('shutting down')),
          SHUTDOWN_TIMEOUT_MS,
        );
        assert.ok(noticed, 'the server did not log that it is shutting down');

        // New connections after the signal, while the slow requests still hold the server open.
        const newcomers: string[] = [];
        for (let i = 0; i < 5; i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          const connection = new Connection(server.url);
          try {
            const reply = await connection.send('GET', '/users?limit=1', { timeoutMs: 5000 });
            newcomers.push(`${reply.status} ${reply.headers['content-type']} ${reply.headers.connection}`);
          } catch (error) {
            newcomers.push(error instanceof NoAnswer ? error.message.replace(/^.*?: /, '') : String(error));
          } finally {
            connection.close();
          }
        }

        const exit = await exited;
        const took = Date.now() - signalled;
        await writers.stop();
        const readOutcomes = await Promise.all(readers.map((reader) => reader.done));
        const postOutcomes = await Promise.all(posts.map((post) => post.done));

        // Every answered write, on a fresh server over the same database.
        restarted = await startServer(env);
        const listed = await call(restarted.url, 'GET', '/users?fields=id,name,age,city');
        assert.equal(listed.status, 200);
        const stored = new Map<number, NonNullable<Shown>>();
        for (const { id, ...record } of listed.json.data as Array<{ id: number } & NonNullable<Shown>>) {
          if (!record.name.includes('bulk') && !record.name.includes('slow')) stored.set(id, record);
        }
        const { problems, appliedInDoubt } = checkLedger(writers.ledger, stored);
        const storedNames = new Set((listed.json.data as Array<{ name: string }>).map((record) => record.name));

        const { ledger } = writers;
        t.diagnostic(
          `shutdown [${backend.name}]: exit ${exit} ${took} ms after SIGTERM (limit ${SHUTDOWN_TIMEOUT_MS} ms); table ${TABLE[backend.name]} records (seeded in ${seeded} ms), ${WRITERS} writers`,
        );
        t.diagnostic(
          `  writes: ${ledger.writes} answered 200, all checked after restart (${ledger.answered.size} records, ${ledger.maybe.size + ledger.maybeCreated.size} in doubt, of which ${appliedInDoubt} were applied); outcomes ${JSON.stringify(Object.fromEntries(ledger.outcomes))}`,
        );
        t.diagnostic(
          `  slow listings (reader paused ${READER_PAUSE_MS} ms): ${readOutcomes.map((o) => `${o.status}${o.complete ? ' whole' : ' cut'} ${o.body.length} B, last byte ${o.endedAt - signalled} ms after SIGTERM`).join('; ')}`,
        );
        t.diagnostic(
          `  slow bodies: ${postOutcomes.map((o) => `${o.status}${o.complete ? ' whole' : ' cut'}`).join(', ')}`,
        );
        t.diagnostic(`  new connections after SIGTERM: ${newcomers.join('; ')}`);

        // In time, as the server itself judges it rather than the test's clock: once SHUTDOWN_TIMEOUT_MS
        // has passed its timer logs 'shutdown timed out' and exits 1, so exit 0 says the close
        // finished before that timer fired.
        assert.equal(exit, 0, `exit ${exit} after ${took} ms`);
        assert.ok(!server.logs.some((line) => line.includes('shutdown timed out')), 'the shutdown timed out');
        assert.deepEqual(ledger.failures.slice(0, 10), [], 'answers that were neither 200 nor a clean 503');
        assert.deepEqual(problems.slice(0, 10), [], `${problems.length} problems with the stored records`);
        const inFlight = [
          ...readOutcomes.map((outcome, i) => judgeInFlight(`slow listing ${i}`, outcome)),
          ...postOutcomes.map((outcome, i) => judgeInFlight(`slow body ${i}`, outcome)),
        ].filter((problem) => problem !== undefined);
        assert.deepEqual(inFlight, []);
        for (const outcome of readOutcomes.filter((o) => o.status === 200)) {
          const records = (JSON.parse(outcome.body) as { data: unknown[] }).data.length;
          assert.ok(records >= TABLE[backend.name], `a listing answered 200 holds ${records} records`);
        }
        postOutcomes.forEach((outcome, i) => {
          if (outcome.status === 200)
            assert.ok(storedNames.has(`${PREFIX}slow${i}`), `slow body ${i} answered 200 but lost`);
        });
        for (const newcomer of newcomers) {
          assert.match(newcomer, /ECONNREFUSED|^503 application\/problem\+json/, 'a new connection after SIGTERM');
        }
        assertNotLogged(
          [...server.logs, ...restarted.logs],
          [PREFIX, ...[...ledger.answered.values()].flatMap((r) => (r === null ? [] : [r.name, r.city])).slice(0, 300)],
        );
      } finally {
        await server.stop('SIGKILL');
        await restarted?.stop();
        await database.drop();
      }
    });
  });
}
