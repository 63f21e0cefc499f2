import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, type Database } from '../helpers/backends.ts';
import { call } from '../helpers/http.ts';
import { type RunningServer, startServer } from '../helpers/server.ts';

const postgresql = BACKENDS.find((backend) => backend.name === 'postgresql');

interface Created {
  name: string;
  city: string;
}

/** What the mixed load saw answered 200, by id. */
interface Seen {
  created: Map<number, Created>;
  updatedCities: Map<number, Set<string>>;
  deleted: Set<number>;
  statuses: Map<number, number>;
}

/**
 * `loops` concurrent clients, each sending `perLoop` creates, updates and deletes, alternating
 * between the instances so that both write at once. Bounded by count.
 */
async function mixedLoad(urls: string[], loops: number, perLoop: number): Promise<Seen> {
  const seen: Seen = { created: new Map(), updatedCities: new Map(), deleted: new Set(), statuses: new Map() };
  const live = () => [...seen.created.keys()].filter((id) => !seen.deleted.has(id));
  const count = (status: number) => seen.statuses.set(status, (seen.statuses.get(status) ?? 0) + 1);
  const loop = async (l: number) => {
    for (let n = 0; n < perLoop; n++) {
      const base = urls[(l + n) % urls.length] as string;
      const ids = live();
      const target = ids[Math.floor(Math.random() * ids.length)];
      const roll = Math.random();
      if (target === undefined || roll < 0.5) {
        const record = { name: `p${l}-${n}`, city: `c${n % 9}` };
        const answer = await call(
          base,
          'POST',
          `/users?name=${record.name}&age=${n % 151}&city=${record.city}&fields=id`,
        );
        count(answer.status);
        if (answer.status === 200) seen.created.set(answer.json.data[0].id, record);
      } else if (roll < 0.8) {
        const city = `u${l}-${n}`;
        const answer = await call(base, 'PATCH', `/users/${target}?city=${city}`);
        count(answer.status);
        if (answer.status === 200) {
          const cities = seen.updatedCities.get(target) ?? new Set();
          seen.updatedCities.set(target, cities.add(city));
        }
      } else {
        const answer = await call(base, 'DELETE', `/users/${target}`);
        count(answer.status);
        if (answer.status === 200) seen.deleted.add(target);
      }
    }
  };
  await Promise.all(Array.from({ length: loops }, (_, l) => loop(l)));
  return seen;
}

// Several stateless instances on one PostgreSQL database: whatever one instance answers, the
// other agrees with, because ids, order, versions and ETags all come from the database.
describe('two instances on one PostgreSQL database', { skip: postgresql?.skip ?? 'no PostgreSQL backend' }, () => {
  let database: Database;
  let servers: RunningServer[] = [];
  before(async () => {
    database = await (postgresql as NonNullable<typeof postgresql>).fresh();
    servers = await Promise.all([1, 2].map(() => startServer({ DATABASE_URL: database.url })));
  });
  after(async () => {
    for (const server of servers) await server.stop();
    await database?.drop();
  });

  it('list exactly the same records, each once, in the same order, with the same ETag', async () => {
    const urls = servers.map((server) => server.url);
    const seen = await mixedLoad(urls, 20, 30);
    for (const status of seen.statuses.keys()) {
      assert.ok([200, 404].includes(status), `unexpected status ${status}: ${JSON.stringify([...seen.statuses])}`);
    }
    assert.ok(seen.created.size >= 150, `only ${seen.created.size} creates answered`);

    const path = '/users?fields=id,name,age,city,createdAt,updatedAt';
    const [first, second] = await Promise.all(urls.map((url) => call(url, 'GET', path)));
    assert.ok(first !== undefined && second !== undefined);
    assert.equal(first.status, 200);
    assert.equal(second.text, first.text, 'the instances list different records');
    assert.equal(second.headers.get('etag'), first.headers.get('etag'));

    const listed: Array<{ id: number; name: string; city: string }> = first.json.data;
    const ids = listed.map((record) => record.id);
    assert.deepEqual(
      ids,
      [...ids].sort((a, b) => a - b),
      'not in creation (id) order',
    );
    assert.equal(new Set(ids).size, ids.length, 'a record is listed twice');
    const expected = [...seen.created.keys()].filter((id) => !seen.deleted.has(id)).sort((a, b) => a - b);
    assert.deepEqual(ids, expected, 'the listed ids are not the answered creates minus the answered deletes');
    for (const record of listed) {
      const created = seen.created.get(record.id) as Created;
      assert.equal(record.name, created.name);
      const cities = seen.updatedCities.get(record.id) ?? new Set([created.city]);
      assert.ok(cities.has(record.city), `record ${record.id} has city ${record.city}, never answered`);
    }
    for (const id of ids.slice(0, 40)) {
      const [a, b] = await Promise.all(urls.map((url) => call(url, 'GET', `/users/${id}`)));
      assert.equal(a?.headers.get('etag'), b?.headers.get('etag'), `record ${id} has two ETags`);
    }
    const writes = [...seen.statuses.values()].reduce((sum, n) => sum + n, 0);
    console.log(
      `# two instances: ${writes} writes (${seen.created.size} creates, ${seen.updatedCities.size} records updated, ${seen.deleted.size} deletes), ${ids.length} records listed identically`,
    );
  });

  it('a record written through one instance is read, changed and deleted through the other', async () => {
    const [a, b] = servers.map((server) => server.url) as [string, string];
    const created = await call(a, 'POST', '/users?name=Ada&age=36&city=London');
    const location = created.headers.get('location') ?? '';
    const read = await call(b, 'GET', location);
    assert.equal(read.status, 200);
    assert.equal(read.headers.get('etag'), created.headers.get('etag'));
    const stale = await call(b, 'PATCH', `${location}?city=Paris`, { headers: { 'if-match': '"0-1"' } });
    assert.equal(stale.status, 412);
    const changed = await call(b, 'PATCH', `${location}?city=Paris`, {
      headers: { 'if-match': created.headers.get('etag') ?? '' },
    });
    assert.equal(changed.status, 200);
    const lost = await call(a, 'PATCH', `${location}?city=Rome`, {
      headers: { 'if-match': created.headers.get('etag') ?? '' },
    });
    assert.equal(lost.status, 412, 'an update based on the old version must not overwrite the newer one');
    assert.equal((await call(a, 'DELETE', location)).status, 200);
    assert.equal((await call(b, 'GET', location)).status, 404);
  });
});
