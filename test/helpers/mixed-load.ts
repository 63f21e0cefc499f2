import { Connection, NoAnswer, type Reply } from './client.ts';
import { Latencies } from './latency.ts';

/** A record as the default fields show it. */
interface Shown {
  name: string;
  age: string;
  city: string;
}

/** What a run of the mixed load saw, across all its connections. */
export interface MixedLoad {
  requests: number;
  /** Answers that were not the expected success, wrong bodies, and requests with no whole answer. */
  errors: number;
  /** The first few errors, described. */
  failures: string[];
  statuses: Map<number, number>;
  /** Requests per operation. */
  operations: Map<string, number>;
  latencies: Latencies;
  /** Every record the clients hold, by id, as they last saw it answered. */
  owned: Map<number, Shown>;
}

export interface MixedLoadOptions {
  connections: number;
  /** Each connection keeps about this many records of its own: creates balance deletes. */
  recordsPerConnection: number;
  /** The load stops at this time (Date.now()). */
  until: number;
  /**
   * On a machine too busy to make this many requests by `until`, the load goes on until it has,
   * but never past `deadline`: the count a test asserts then measures the service, not the machine.
   */
  minRequests?: number;
  deadline?: number;
  /** Starts every name and city sent (at least 6 characters, unlikely to appear by chance). */
  prefix: string;
  headers?: Record<string, string>;
}

const OPERATIONS = [
  ['get', 30],
  ['page', 12],
  ['filter', 10],
  ['full', 3],
  ['create-or-delete', 25],
  ['patch', 20],
] as const;
type Operation = (typeof OPERATIONS)[number][0];
const TOTAL_WEIGHT = OPERATIONS.reduce((sum, [, weight]) => sum + weight, 0);

function pick(): Operation {
  let roll = Math.random() * TOTAL_WEIGHT;
  for (const [operation, weight] of OPERATIONS) {
    roll -= weight;
    if (roll < 0) return operation;
  }
  return 'get';
}

function randomOf<T>(values: readonly T[]): T {
  return values[Math.floor(Math.random() * values.length)] as T;
}

const same = (a: Shown | undefined, b: Shown | undefined) =>
  a !== undefined && b !== undefined && a.name === b.name && a.age === b.age && a.city === b.city;

/**
 * Mixed reads and writes from `connections` keep-alive connections until `until`. Each connection
 * works on records of its own (its own two cities), so it knows exactly what every answer must
 * hold: reads of its records, its filtered lists and its share of the full listing are checked
 * against what it wrote. The table stays about `connections * recordsPerConnection` records.
 */
export async function runMixedLoad(url: string, options: MixedLoadOptions): Promise<MixedLoad> {
  const load: MixedLoad = {
    requests: 0,
    errors: 0,
    failures: [],
    statuses: new Map(),
    operations: new Map(),
    latencies: new Latencies(),
    owned: new Map(),
  };
  const going = () =>
    Date.now() < options.until ||
    (load.requests < (options.minRequests ?? 0) && Date.now() < (options.deadline ?? options.until));
  const fail = (message: string) => {
    load.errors++;
    if (load.failures.length < 20) load.failures.push(message);
  };

  const client = async (c: number) => {
    const connection = new Connection(url);
    const cities: readonly string[] = [`${options.prefix}c${c}a`, `${options.prefix}c${c}b`];
    const mine = new Map<number, Shown>();
    let sequence = 0;
    let highestId = 0;

    /** Sends, times and counts one request; the parsed `data` of a 200, or undefined after reporting why not. */
    const send = async (operation: Operation | 'seed', method: string, path: string): Promise<Reply | undefined> => {
      load.requests++;
      load.operations.set(operation, (load.operations.get(operation) ?? 0) + 1);
      try {
        const reply = await load.latencies.time(() => connection.send(method, path, { headers: options.headers }));
        load.statuses.set(reply.status, (load.statuses.get(reply.status) ?? 0) + 1);
        if (reply.status === 200) return reply;
        fail(`${method} ${path.split('?')[0]}: ${reply.status} ${reply.body.toString().slice(0, 300)}`);
      } catch (error) {
        fail(error instanceof NoAnswer ? error.message : String(error));
      }
      return undefined;
    };
    const dataOf = (reply: Reply | undefined): Shown[] | undefined => {
      if (reply === undefined) return undefined;
      try {
        const body = JSON.parse(reply.body.toString()) as { data: Shown[] };
        if (Array.isArray(body.data)) return body.data;
      } catch {
        // reported below
      }
      fail(`a 200 answer that is not a {data:[...]} envelope: ${reply.body.toString().slice(0, 200)}`);
      return undefined;
    };
    const expectOne = (operation: string, data: Shown[] | undefined, expected: Shown) => {
      if (data !== undefined && !(data.length === 1 && same(data[0], expected))) {
        fail(`${operation}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(data)}`);
      }
    };

    const create = async (operation: Operation | 'seed') => {
      const record: Shown = {
        name: `${options.prefix}n${c}x${++sequence}`,
        age: String(sequence % 151),
        city: randomOf(cities),
      };
      const reply = await send(operation, 'POST', `/users?${new URLSearchParams({ ...record })}`);
      const id = Number(/^\/users\/(\d+)$/.exec(String(reply?.headers.location))?.[1]);
      expectOne('POST', dataOf(reply), record);
      if (reply !== undefined && id > 0) {
        mine.set(id, record);
        highestId = Math.max(highestId, id);
      } else if (reply !== undefined) fail(`POST answered 200 with Location ${reply.headers.location}`);
    };

    try {
      while (mine.size < options.recordsPerConnection && going()) await create('seed');
      while (going()) {
        const operation = pick();
        const ids = [...mine.keys()];
        if (ids.length === 0 && operation !== 'create-or-delete' && operation !== 'full') continue;
        const id = randomOf(ids);
        const record = mine.get(id) as Shown;
        switch (operation) {
          case 'get':
            expectOne('GET /users/:id', dataOf(await send(operation, 'GET', `/users/${id}`)), record);
            break;
          case 'page': {
            const after = Math.floor(Math.random() * highestId);
            const data = dataOf(await send(operation, 'GET', `/users?limit=20&after=${after}`));
            if (data !== undefined && data.length > 20) fail(`a page of 20 held ${data.length}`);
            break;
          }
          case 'filter': {
            const city = randomOf(cities);
            const data = dataOf(await send(operation, 'GET', `/users?city=${city}&limit=1000`));
            const expected = [...mine.values()].filter((shown) => shown.city === city).length;
            if (data !== undefined && (data.length !== expected || data.some((shown) => shown.city !== city))) {
              fail(`?city= listed ${data.length} records, ${expected} expected`);
            }
            break;
          }
          case 'full': {
            const data = dataOf(await send(operation, 'GET', '/users'));
            const listed = data?.filter((shown) => cities.includes(shown.city)).length;
            if (listed !== undefined && listed !== mine.size) {
              fail(`GET /users listed ${listed} of this client's records, ${mine.size} expected`);
            }
            break;
          }
          case 'create-or-delete':
            if (
              mine.size < options.recordsPerConnection ||
              (mine.size === options.recordsPerConnection && sequence % 2)
            ) {
              await create(operation);
            } else {
              expectOne('DELETE', dataOf(await send(operation, 'DELETE', `/users/${id}`)), record);
              mine.delete(id);
            }
            break;
          case 'patch': {
            const changed = { ...record, age: String(++sequence % 151), city: randomOf(cities) };
            if (sequence % 3 === 0) changed.name = `${options.prefix}m${c}x${sequence}`;
            const query = new URLSearchParams({ age: changed.age, city: changed.city });
            if (changed.name !== record.name) query.set('name', changed.name);
            const data = dataOf(await send(operation, 'PATCH', `/users/${id}?${query}`));
            expectOne('PATCH', data, changed);
            if (data !== undefined) mine.set(id, changed);
            break;
          }
        }
      }
    } finally {
      connection.close();
      for (const [id, shown] of mine) load.owned.set(id, shown);
    }
  };

  await Promise.all(Array.from({ length: options.connections }, (_, c) => client(c)));
  return load;
}
