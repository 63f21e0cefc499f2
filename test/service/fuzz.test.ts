// The fuzz suite: fast-check generates hostile requests (methods, paths, query strings, headers,
// bodies, content types, malformed encodings, huge and nested values, __proto__ keys, Host headers
// missing, repeated or naming other hosts, cross-origin headers, parameter bombs, connections reset
// mid-request), sent raw to a running server, one at a time. No answer may be a 5xx, every error is
// problem details, a request with a Host the service does not answer to or a change from another
// site's page is refused and changes nothing, the answer to a parameter bomb stays small, a reset
// leaves no error in the log, the server stays up, and at the end the stored records equal exactly
// the model of the answered writes.
// Replay a failure with FUZZ_SEED=<the seed it printed>; SUITE_SCALE=long sends many more requests.
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type Backend, BACKENDS } from '../helpers/backends.ts';
import {
  encodeRequest,
  expectedGate,
  expectedWrite,
  type FuzzRequest,
  hasBomb,
  requestArbitrary,
  resetPoint,
  sendAndReset,
  type Site,
} from '../helpers/fuzz-requests.ts';
import { assertProblem, call } from '../helpers/http.ts';
import { assertNotLogged } from '../helpers/log-check.ts';
import { sendRaw } from '../helpers/raw-http.ts';
import { scaled } from '../helpers/scale.ts';
import { startServer } from '../helpers/server.ts';
import { invalidRecord, type Value } from '../helpers/writers.ts';

const SEED = Number(process.env.FUZZ_SEED ?? randomInt(2 ** 31));
/** The seed in base 36, at least 4 digits: the marker and the tokens stay long enough for any seed. */
const TAG = SEED.toString(36).padStart(4, '0');
/** A path id as the service reads it: a positive integer, leading zeros allowed (`/users/01` is record 1). */
const ID = /^0*[1-9][0-9]{0,15}$/;
const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const ALL_FIELDS = ['id', 'name', 'age', 'city', 'createdAt', 'updatedAt'];
/** The largest answer to a parameter bomb: it names at most 20 parameters, each cut to 64 characters. */
const BOMB_ANSWER_LIMIT = 4096;
const MAX_LISTED_FAULTS = 20;
const NAME_SHOWN = 64;
/** The limits the service reads (src/http/limits.ts): the URL, and the request line with the headers. */
const URL_LIMIT = 8 * 1024;
const HEADER_LIMIT = 16 * 1024;
/** The Host names the service answers to when ALLOWED_HOSTS is unset (it listens on 127.0.0.1). */
const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '[::1]'];

interface Variant {
  name: string;
  backend: Backend;
  runs: number;
  tokens?: { read: string; write: string };
  /** Settings beyond the database's; `site` says what they make the service answer to. */
  env?: Record<string, string>;
  site: Site;
}

const [sqlite, postgresql] = BACKENDS as [Backend, Backend];
// Each variant has its own Host and CORS settings: the defaults, a list of hosts with any origin
// trusted, and a list of trusted origins.
const VARIANTS: Variant[] = [
  { name: 'sqlite', backend: sqlite, runs: scaled(1200, 20_000), site: { hosts: LOOPBACK_HOSTS, corsOrigins: [] } },
  {
    name: 'postgresql',
    backend: postgresql,
    runs: scaled(500, 5000),
    env: { ALLOWED_HOSTS: '127.0.0.1,users.example,[::1]', CORS_ORIGINS: '*' },
    site: { hosts: ['127.0.0.1', 'users.example', '[::1]'], corsOrigins: ['*'] },
  },
  {
    name: 'sqlite, with API_TOKENS',
    backend: sqlite,
    runs: scaled(300, 3000),
    tokens: {
      read: `rdtok${TAG}Qx-7c2e9a4b5d1f-0abcdefgh`,
      write: `wrtok${TAG}Qy-3f8a1b6c9e2d-0abcdefgh`,
    },
    env: { CORS_ORIGINS: 'https://app.example,http://localhost:5173' },
    site: { hosts: LOOPBACK_HOSTS, corsOrigins: ['https://app.example', 'http://localhost:5173'] },
  },
];

/** The route a request path reaches: the collection, one record id, or neither. */
function route(url: string): 'collection' | number | undefined {
  // An absolute-form target (RFC 9112 3.2.2) reaches the same route as its path.
  const path = (url.split('?')[0] ?? '').replace(/^https?:\/\/[^/]*/i, '');
  if (path === '/users') return 'collection';
  const segment = /^\/users\/([^/]*)$/.exec(path)?.[1];
  if (segment === undefined) return undefined;
  let id: string;
  try {
    id = decodeURIComponent(segment);
  } catch {
    return undefined;
  }
  return ID.test(id) && Number.isSafeInteger(Number(id)) ? Number(id) : undefined;
}

/** The keys a `fields` parameter selects, in canonical order (the default without one). */
function selected(request: FuzzRequest): string[] {
  const fields = request.params.find((param) => param.name === 'fields' && param.garbage === undefined)?.value;
  if (fields === undefined) return ['name', 'age', 'city'];
  const wanted = new Set(fields.split(','));
  return ALL_FIELDS.filter((field) => wanted.has(field));
}

for (const variant of VARIANTS) {
  describe(`fuzz [${variant.name}]`, { timeout: scaled(120_000, 900_000), skip: variant.backend.skip }, () => {
    it(`${variant.runs} generated requests: no 5xx, problem details, stored set = answered writes`, async (t) => {
      t.diagnostic(`seed ${SEED} (replay: FUZZ_SEED=${SEED})`);
      const mark = `Fz${TAG}`;
      const database = await variant.backend.fresh();
      const { tokens } = variant;
      const env: Record<string, string> = { ...variant.env, DATABASE_URL: database.url, RATE_LIMIT: 'off' };
      if (tokens !== undefined) env.API_TOKENS = `read:${tokens.read},write:${tokens.write}`;
      const server = await startServer(env);
      const model = new Map<number, Value>();
      const created = new Set<number>();
      let highest = 0;
      const statuses = new Map<number, number>();
      let sent = 0;
      let writes = 0;
      let resets = 0;
      let bombs = 0;
      let capped = 0;
      let refusedWrites = 0;
      const oversized: { size: number; request: string }[] = [];
      let logsChecked = 0;
      let previous = '';
      const started = Date.now();
      const port = new URL(server.url).port;
      const tokenHeaders: Record<string, string> =
        tokens === undefined ? {} : { authorization: `Bearer ${tokens.write}` };
      // With tokens, most requests carry the write token, some the read token, some none.
      const authorization = (pick: number) =>
        tokens === undefined
          ? undefined
          : [`Bearer ${tokens.write}`, `Bearer ${tokens.write}`, `Bearer ${tokens.read}`, undefined][pick % 4];
      // With tokens, half of all writes are refused for their token: the other refusals come half as often.
      const arbitrary = requestArbitrary(mark, tokens === undefined ? [] : [tokens.read, tokens.write], tokens ? 2 : 1);

      try {
        /** No log line at error level or above, nor anything that is not a log line (a stack trace). */
        const checkLogs = (request: string) => {
          const fresh = server.logs.slice(logsChecked);
          logsChecked += fresh.length;
          const bad = fresh.filter((line) => {
            try {
              return ((JSON.parse(line) as { level?: number }).level ?? 0) >= 50;
            } catch {
              return !/^\(node:\d+\) /.test(line); // a Node warning is not an error
            }
          });
          assert.deepEqual(bad, [], `error logged, after:\n${request}\n(the request before: ${previous})`);
          previous = request.slice(0, 600);
        };

        const property = fc.asyncProperty(arbitrary, async (request) => {
          const live = [...model.keys()];
          const gone = [...created].filter((id) => !model.has(id));
          const {
            path,
            bytes,
            headLength,
            sent: headers,
          } = encodeRequest(request, {
            live,
            gone,
            authorization,
            port,
          });
          const target = route(path);
          sent++;

          if (request.reset !== undefined) {
            // The client resets the connection mid-request: the service never has the whole
            // request, so nothing may change, and nothing may be logged as an error.
            const cut = resetPoint(request.reset, bytes.length, headLength);
            const early = await sendAndReset(server.url, bytes, cut, request.reset.delayMs);
            resets++;
            const shownReset = `${JSON.stringify(bytes.subarray(0, Math.min(cut, 1500)).toString('latin1'))} (${cut} of ${bytes.length} bytes, then reset after ${request.reset.delayMs} ms)`;
            assert.ok(early.status < 500, `${early.status} to ${shownReset}\nanswer: ${early.wire}`);
            checkLogs(shownReset);
            return;
          }

          const answer = await sendRaw(server.url, bytes);
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          const shown = () => `${JSON.stringify(bytes.subarray(0, 1500).toString('latin1'))}\nanswer: ${answer.wire}`;
          assert.ok(answer.status >= 100, `no answer (server alive: ${alive(server.pid)}) to ${shown()}`);
          assert.ok(answer.status < 500, `${answer.status} to ${shown()}`);
          const head = request.method === 'HEAD';
          if (answer.status >= 400 && !head) {
            try {
              assertProblem(answer, answer.status);
            } catch (error) {
              throw new Error(`not problem details: ${(error as Error).message}\nrequest: ${shown()}`);
            }
          }
          checkLogs(shown());
          const type = head ? undefined : (answer.json as { type?: string } | undefined)?.type;
          const problem = (status: number, name: string) =>
            answer.status === status && (head || type === `/problems/${name}`);
          // 414 is for a URL over 8 KiB, whatever else is too large.
          if (answer.status === 414) {
            assert.ok(path.length > URL_LIMIT, `414 to a URL of ${path.length} characters: ${shown()}`);
          }
          // Refusals that come before the Host is looked at: HTTP the parser cannot read (or a URL it
          // cannot decode), an Expect it does not meet, a head over the parser's limit.
          const unreadable =
            problem(400, 'malformed-request') ||
            problem(417, 'expectation-failed') ||
            answer.status === 431 ||
            (answer.status === 414 && headLength > HEADER_LIMIT);

          // Host: a name the service does not answer to is 421, a missing or repeated Host 400.
          const gate = expectedGate(request, headers, variant.site);
          const gateText = () => `(Host ${gate.host}, origin ${gate.origin}) ${shown()}`;
          if (gate.host === 'misdirected') assert.ok(problem(421, 'misdirected-request') || unreadable, gateText());
          if (gate.host === 'malformed') assert.ok(problem(400, 'malformed-request') || unreadable, gateText());
          if (gate.host === 'refused') {
            assert.ok(problem(421, 'misdirected-request') || unreadable, gateText());
          }
          if (gate.host === 'ours') assert.notEqual(answer.status, 421, gateText());
          const hostRefused = answer.status === 421 || (gate.host !== 'ours' && problem(400, 'malformed-request'));
          // A change from another site's page: 403 cross-origin-write, after the Host and URL checks.
          if (!hostRefused && gate.origin === 'refuse') {
            assert.ok(problem(403, 'cross-origin-write') || unreadable || answer.status === 414, gateText());
          }
          if (gate.origin === 'pass') {
            assert.ok(head ? answer.status !== 403 : type !== '/problems/cross-origin-write', gateText());
          }
          const gateRefused =
            hostRefused ||
            gate.host === 'misdirected' ||
            gate.host === 'malformed' ||
            gate.host === 'refused' ||
            (gate.origin === 'refuse' && answer.status === 403);

          // Parameter bombs: refused (on the routes that read them), and answered briefly.
          if (type === '/problems/invalid-input') {
            const errors = (answer.json as { errors?: { parameter: string }[] }).errors ?? [];
            assert.ok(errors.length <= MAX_LISTED_FAULTS, `${errors.length} faults listed: ${shown()}`);
            for (const { parameter } of errors) {
              assert.ok([...parameter].length <= NAME_SHOWN + 1, `a name quoted in full: ${shown()}`);
            }
          }
          if (hasBomb(request)) {
            bombs++;
            const size = Buffer.byteLength(answer.text);
            if (answer.text.includes('At most 50 parameters')) capped++;
            // A refusal is short; a body the route does not read (GET) leaves the answer as it is.
            if (answer.status >= 400 && size >= BOMB_ANSWER_LIMIT) {
              const bomb = request.queryBomb ?? (request.body as { bomb?: unknown }).bomb;
              const line = bytes.subarray(0, Math.min(bytes.indexOf('\r\n'), 200)).toString('latin1');
              oversized.push({
                size,
                request: `${JSON.stringify(line)}… with ${JSON.stringify(bomb)} in its ${request.queryBomb === undefined ? request.body.kind : 'query'}, answered ${answer.status}: ${answer.text.slice(0, 400)}…`,
              });
            }
            const reads =
              request.queryBomb !== undefined
                ? ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(request.method)
                : WRITES.has(request.method);
            if (reads && target !== undefined) {
              assert.ok(answer.status >= 400, `a parameter bomb answered ${answer.status}: ${shown()}`);
            }
          }

          const ok = answer.status >= 200 && answer.status < 300;
          if (ok && target !== undefined && (request.method === 'GET' || WRITES.has(request.method))) {
            const body = answer.json;
            assert.deepEqual(Object.keys(body ?? {}), ['data'], `envelope of ${shown()}`);
            assert.ok(Array.isArray(body.data), `data is not an array: ${shown()}`);
            const keys = selected(request);
            for (const record of body.data) {
              const fault = invalidRecord(record, keys);
              assert.equal(fault, undefined, `invalid record ${JSON.stringify(record)} in ${shown()}`);
            }
          }
          if (!ok && WRITES.has(request.method) && gateRefused && !('refuse' in expectedWrite(request))) {
            // A write the service would have taken, refused for its Host or its origin: it changed nothing.
            refusedWrites++;
            await assertUnchanged(request.method, target, shown);
          }
          if (!ok || !WRITES.has(request.method)) return;

          // A write was accepted: it must have been a valid one, and the model follows it.
          writes++;
          assert.ok(target !== undefined, `${request.method} ${path} answered ${answer.status}: ${shown()}`);
          const expected = expectedWrite(request);
          if (request.method === 'POST') {
            assert.equal(target, 'collection', shown());
            const id = Number(/^\/users\/(\d+)$/.exec(answer.headers.get('location') ?? '')?.[1]);
            assert.ok(id > 0, `no Location: ${shown()}`);
            if (created.has(id)) {
              // An Idempotency-Key replay: the first answer again, nothing stored.
              assert.ok(
                request.headers.some(([name]) => name === 'idempotency-key'),
                `id ${id} reused: ${shown()}`,
              );
              return;
            }
            assert.ok(!('refuse' in expected), `accepted, but ${JSON.stringify(expected)}: ${shown()}`);
            assert.ok(id > highest, `id ${id} not above ${highest}: ${shown()}`);
            highest = id;
            created.add(id);
            model.set(id, expected.fields as Value);
          } else {
            assert.equal(typeof target, 'number', shown());
            const id = target as number;
            const current = model.get(id);
            assert.ok(current !== undefined, `${request.method} of a record that is not stored: ${shown()}`);
            assert.ok(!('refuse' in expected), `accepted, but ${JSON.stringify(expected)}: ${shown()}`);
            if (request.method === 'DELETE') model.delete(id);
            else model.set(id, { ...current, ...expected.fields });
          }
          const shownRecord = answer.json.data[0] as Record<string, unknown>;
          const stored =
            request.method === 'DELETE' ? undefined : model.get(target === 'collection' ? highest : target);
          for (const field of ['name', 'age', 'city'] as const) {
            if (stored !== undefined && field in shownRecord) {
              assert.equal(shownRecord[field], String(stored[field]), `answered ${field} differs: ${shown()}`);
            }
          }
        });
        /** What a refused write could have changed is as the model says. */
        const assertUnchanged = async (method: string, where: ReturnType<typeof route>, shown: () => string) => {
          if (method === 'POST') {
            const path = highest === 0 ? '/users?fields=id' : `/users?after=${highest}&limit=1&fields=id`;
            const after = await call(server.url, 'GET', path, { headers: tokenHeaders });
            assert.equal(after.status, 200, after.text);
            assert.deepEqual(after.json.data, [], `a refused POST stored a record: ${shown()}`);
          } else if (typeof where === 'number') {
            const stored = model.get(where);
            const now = await call(server.url, 'GET', `/users/${where}?fields=name,age,city`, {
              headers: tokenHeaders,
            });
            const expected =
              stored === undefined ? undefined : [{ name: stored.name, age: String(stored.age), city: stored.city }];
            assert.deepEqual(now.json?.data, expected, `a refused ${method} changed record ${where}: ${shown()}`);
          }
        };

        // A run that happened to draw few accepted writes goes on with the next seeds (at most three
        // more rounds), so the floor below holds by construction rather than by luck of the seed.
        const floor = variant.runs / (tokens === undefined ? 20 : 60);
        for (let round = 0; round === 0 || (writes <= floor && round < 4); round++) {
          await fc.assert(property, {
            numRuns: variant.runs,
            seed: SEED + round,
            endOnFailure: true,
            includeErrorInReport: true,
          });
        }

        assert.ok(alive(server.pid), 'the server died');
        const listing = await call(server.url, 'GET', '/users?fields=id,name,age,city', { headers: tokenHeaders });
        assert.equal(listing.status, 200, listing.text);
        for (const record of listing.json.data) {
          assert.equal(invalidRecord(record, ['id', 'name', 'age', 'city']), undefined, JSON.stringify(record));
        }
        const expected = [...model]
          .sort(([a], [b]) => a - b)
          .map(([id, value]) => ({ id, name: value.name, age: String(value.age), city: value.city }));
        assert.deepEqual(listing.json.data, expected, 'the stored set differs from the answered writes');
        assert.ok(writes > floor, `only ${writes} writes were accepted: the fuzzing proved little`);
        assert.ok(model.size > 0 || created.size > 0, 'no record was ever created');

        assertNotLogged(server.logs, [mark, ...(tokens === undefined ? [] : [tokens.read, tokens.write])]);
        checkLogs('(the end of the run)');
        const largest = oversized.sort((a, b) => b.size - a.size)[0];
        assert.equal(
          oversized.length,
          0,
          `${oversized.length} of ${bombs} answers to parameter bombs were ${BOMB_ANSWER_LIMIT} bytes or more; ` +
            `the largest, ${largest?.size} bytes, to ${largest?.request}`,
        );
      } finally {
        const histogram = [...statuses]
          .sort(([a], [b]) => a - b)
          .map(([status, count]) => `${status}×${count}`)
          .join(' ');
        t.diagnostic(
          `fuzz [${variant.name}] seed ${SEED}: ${sent} requests in ${Date.now() - started} ms, ${writes} writes accepted, ` +
            `${created.size} records created, ${model.size} in the model at the end, statuses ${histogram}, ` +
            `${resets} reset mid-request (${server.logs.filter((line) => line.includes('request aborted by the client')).length} logged as aborted), ` +
            `${bombs} parameter bombs (${capped} answered "At most 50 parameters"), ${refusedWrites} writes refused for Host or ` +
            `origin checked unchanged, ${server.logs.length} log lines`,
        );
        await server.stop();
        await database.drop();
      }
    });
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
