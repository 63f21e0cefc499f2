// The fuzz suite: fast-check generates hostile requests (methods, paths, query strings, headers,
// bodies, content types, malformed encodings, huge and nested values, __proto__ keys), sent raw to
// a running server, one at a time. No answer may be a 5xx, every error is problem details, the
// server stays up, and at the end the stored records equal exactly the model of the answered writes.
// Replay a failure with FUZZ_SEED=<the seed it printed>; SUITE_SCALE=long sends many more requests.
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type Backend, BACKENDS } from './helpers/backends.ts';
import { encodeRequest, expectedWrite, type FuzzRequest, requestArbitrary } from './helpers/fuzz-requests.ts';
import { assertProblem, call } from './helpers/http.ts';
import { assertNotLogged } from './helpers/log-check.ts';
import { sendRaw } from './helpers/raw-http.ts';
import { scaled } from './helpers/scale.ts';
import { startServer } from './helpers/server.ts';
import { invalidRecord, type Value } from './helpers/writers.ts';

const SEED = Number(process.env.FUZZ_SEED ?? randomInt(2 ** 31));
const ID = /^[1-9][0-9]{0,15}$/;
const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const ALL_FIELDS = ['id', 'name', 'age', 'city', 'createdAt', 'updatedAt'];

interface Variant {
  name: string;
  backend: Backend;
  runs: number;
  tokens?: { read: string; write: string };
}

const [sqlite, postgresql] = BACKENDS as [Backend, Backend];
const VARIANTS: Variant[] = [
  { name: 'sqlite', backend: sqlite, runs: scaled(1200, 20_000) },
  { name: 'postgresql', backend: postgresql, runs: scaled(500, 5000) },
  {
    name: 'sqlite, with API_TOKENS',
    backend: sqlite,
    runs: scaled(300, 3000),
    tokens: {
      read: `rdtok${SEED.toString(36)}Qx-7c2e9a4b5d1f-0abcdefgh`,
      write: `wrtok${SEED.toString(36)}Qy-3f8a1b6c9e2d-0abcdefgh`,
    },
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
      const mark = `Fz${SEED.toString(36)}`;
      const database = await variant.backend.fresh();
      const { tokens } = variant;
      const env: Record<string, string> = { DATABASE_URL: database.url, RATE_LIMIT: 'off' };
      if (tokens !== undefined) env.API_TOKENS = `read:${tokens.read},write:${tokens.write}`;
      const server = await startServer(env);
      const model = new Map<number, Value>();
      const created = new Set<number>();
      let highest = 0;
      const statuses = new Map<number, number>();
      let sent = 0;
      let writes = 0;
      const started = Date.now();
      // With tokens, most requests carry the write token, some the read token, some none.
      const authorization = (pick: number) =>
        tokens === undefined
          ? undefined
          : [`Bearer ${tokens.write}`, `Bearer ${tokens.write}`, `Bearer ${tokens.read}`, undefined][pick % 4];
      const arbitrary = requestArbitrary(mark, tokens === undefined ? [] : [tokens.read, tokens.write]);

      try {
        const property = fc.asyncProperty(arbitrary, async (request) => {
          const live = [...model.keys()];
          const gone = [...created].filter((id) => !model.has(id));
          const { path, bytes } = encodeRequest(request, { live, gone, authorization });
          const answer = await sendRaw(server.url, bytes);
          sent++;
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          const shown = () => `${JSON.stringify(bytes.subarray(0, 1500).toString('latin1'))}\nanswer: ${answer.wire}`;
          assert.ok(answer.status >= 100, `no answer (server alive: ${alive(server.pid)}) to ${shown()}`);
          assert.ok(answer.status < 500, `${answer.status} to ${shown()}`);
          if (answer.status >= 400 && request.method !== 'HEAD') {
            try {
              assertProblem(answer, answer.status);
            } catch (error) {
              throw new Error(`not problem details: ${(error as Error).message}\nrequest: ${shown()}`);
            }
          }
          const target = route(path);
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
        await fc.assert(property, {
          numRuns: variant.runs,
          seed: SEED,
          endOnFailure: true,
          includeErrorInReport: true,
        });

        assert.ok(alive(server.pid), 'the server died');
        const headers: Record<string, string> = tokens === undefined ? {} : { authorization: `Bearer ${tokens.write}` };
        const listing = await call(server.url, 'GET', '/users?fields=id,name,age,city', { headers });
        assert.equal(listing.status, 200, listing.text);
        for (const record of listing.json.data) {
          assert.equal(invalidRecord(record, ['id', 'name', 'age', 'city']), undefined, JSON.stringify(record));
        }
        const expected = [...model]
          .sort(([a], [b]) => a - b)
          .map(([id, value]) => ({ id, name: value.name, age: String(value.age), city: value.city }));
        assert.deepEqual(listing.json.data, expected, 'the stored set differs from the answered writes');
        assert.ok(
          writes > variant.runs / (tokens === undefined ? 20 : 60),
          `only ${writes} writes were accepted: the fuzzing proved little`,
        );
        assert.ok(model.size > 0 || created.size > 0, 'no record was ever created');

        assertNotLogged(server.logs, [mark, ...(tokens === undefined ? [] : [tokens.read, tokens.write])]);
      } finally {
        const histogram = [...statuses]
          .sort(([a], [b]) => a - b)
          .map(([status, count]) => `${status}×${count}`)
          .join(' ');
        t.diagnostic(
          `fuzz [${variant.name}] seed ${SEED}: ${sent} requests in ${Date.now() - started} ms, ${writes} writes accepted, ` +
            `${created.size} records created, ${model.size} in the model at the end, statuses ${histogram}, ` +
            `${server.logs.length} log lines`,
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
