/**
 * Concurrent writers that mix creates, PATCHes, PUTs and DELETEs, and the model that says which
 * states the database may hold after the server was killed under them. Each record is written by
 * one writer at a time, so the order of its writes is known; only the write in flight when the
 * server died is uncertain (it may or may not have committed).
 */

/** A record's stored value; `age` as the integer the service stores. */
export interface Value {
  name: string;
  age: number;
  city: string;
}

/** A record as `GET /users?fields=id,name,age,city` lists it. */
export interface Listed {
  id: number;
  name: string;
  age: string;
  city: string;
}

/** A small seeded generator (mulberry32), so a failing run can be replayed from its seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Why a listed record breaks the field rules of docs/api.md ("Records and input"), or undefined when it is valid. */
export function invalidRecord(record: Record<string, unknown>, keys: readonly string[]): string | undefined {
  const actual = Object.keys(record);
  if (actual.join(',') !== keys.join(',')) return `keys ${actual.join(',')} instead of ${keys.join(',')}`;
  for (const field of ['name', 'city'] as const) {
    if (!keys.includes(field)) continue;
    const text = record[field];
    if (typeof text !== 'string') return `${field} is not a string`;
    const length = [...text].length;
    if (length < 1 || length > 200) return `${field} has ${length} characters`;
    if (text.trim() !== text) return `${field} is not trimmed`;
    if (CONTROL.test(text)) return `${field} holds a control character`;
    if (/[\ud800-\udfff]/u.test(text)) return `${field} holds a lone surrogate`;
  }
  if (keys.includes('age')) {
    const age = record.age;
    if (typeof age !== 'string' || !/^(0|[1-9][0-9]{0,2})$/.test(age) || Number(age) > 150) {
      return `age ${JSON.stringify(age)} is not a decimal string from 0 to 150`;
    }
  }
  if (keys.includes('id')) {
    const id = record.id;
    if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) return `id ${JSON.stringify(id)}`;
  }
  return undefined;
}

function same(listed: Listed, value: Value): boolean {
  return listed.name === value.name && listed.age === String(value.age) && listed.city === value.city;
}

/** What the writers of all rounds were told, and what the database may therefore hold. */
export class CrashModel {
  /** Records whose current value an answered write fixed. */
  readonly records = new Map<number, Value>();
  /** Other states a record may be in: a write to it was sent but not answered (`null`: deleted). */
  readonly maybe = new Map<number, (Value | null)[]>();
  /** Creates sent but not answered, by their (unique) name. */
  readonly pendingCreates = new Map<string, Value>();
  /** Every id ever seen; a new record's id must be above all of them. */
  highestId = 0;
  /** Answered writes, by kind, over all rounds. */
  readonly answered = { create: 0, patch: 0, put: 0, delete: 0 };
  readonly statuses = new Map<number, number>();
  /** Things the writers saw that break the contract (checked by the test). */
  readonly violations: string[] = [];
  /** Every name and city sent, for the logs check. */
  readonly sentValues = new Set<string>();

  /**
   * Compares a listing taken after a restart with what the model allows, returns the faults found,
   * and adopts the listing as the new certain state.
   */
  reconcile(listing: Listed[]): string[] {
    const faults: string[] = [];
    const seen = new Set<number>();
    const names = new Set<string>();
    let previous = 0;
    for (const record of listing) {
      const invalid = invalidRecord(record as unknown as Record<string, unknown>, ['id', 'name', 'age', 'city']);
      if (invalid !== undefined) faults.push(`record ${JSON.stringify(record)}: ${invalid}`);
      if (record.id <= previous) faults.push(`id ${record.id} listed after id ${previous}: not in creation order`);
      previous = record.id;
      if (seen.has(record.id)) faults.push(`id ${record.id} listed twice`);
      seen.add(record.id);
      if (names.has(record.name)) faults.push(`name ${record.name} listed twice (a duplicate write)`);
      names.add(record.name);
      const known = this.records.get(record.id);
      const options = this.maybe.get(record.id) ?? [];
      if (known !== undefined || options.length > 0) {
        const allowed = [known, ...options].filter((value): value is Value => value !== undefined && value !== null);
        if (!allowed.some((value) => same(record, value))) {
          faults.push(
            `id ${record.id} is ${JSON.stringify(record)}; answered writes allow only ${JSON.stringify(allowed)}`,
          );
        }
        continue;
      }
      const pending = this.pendingCreates.get(record.name);
      if (pending === undefined) {
        faults.push(`id ${record.id} (${record.name}) was never created, or was deleted and came back`);
      } else {
        if (!same(record, pending))
          faults.push(`id ${record.id} holds ${JSON.stringify(record)}, sent as ${JSON.stringify(pending)}`);
        if (record.id <= this.highestId) faults.push(`id ${record.id} reused: ${this.highestId} was seen before`);
        this.pendingCreates.delete(record.name);
      }
    }
    for (const [id, value] of this.records) {
      if (!seen.has(id) && !(this.maybe.get(id) ?? []).includes(null)) {
        faults.push(`id ${id} (${value.name}) was answered 200 but is gone after the restart`);
      }
    }
    this.records.clear();
    this.maybe.clear();
    this.pendingCreates.clear();
    for (const record of listing) {
      this.records.set(record.id, { name: record.name, age: Number(record.age), city: record.city });
      this.highestId = Math.max(this.highestId, record.id);
    }
    return faults;
  }

  count(status: number): void {
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
  }
}

export interface MixedLoad {
  /** Tells the writers to stop after their current request; resolves when all have. */
  stop(): Promise<void>;
  /** Writes answered in this round. */
  answered(): number;
}

interface Reply {
  status: number;
  location: string | null;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers are checked field by field
  body: any;
}

async function send(url: string, method: string, path: string, value?: Value, asJson = false): Promise<Reply> {
  let target = `${url}${path}`;
  const init: RequestInit = { method };
  if (value !== undefined && asJson) {
    init.headers = { 'content-type': 'application/json' };
    init.body = JSON.stringify(value);
  } else if (value !== undefined) {
    target += `?${new URLSearchParams({ name: value.name, age: String(value.age), city: value.city })}`;
  }
  return readReply(await fetch(target, init));
}

/**
 * Starts `writers` loops against `url`. Writer `w` owns the known records with `id % writers === w`
 * plus those it creates, and writes only to them. Bounded by `perWriter` requests each; a loop ends
 * at its first connection error (the server has gone) or once stopped.
 */
export function startMixedWriters(
  url: string,
  model: CrashModel,
  options: { writers: number; perWriter: number; tag: string; random: () => number },
): MixedLoad {
  const { writers, perWriter, tag, random } = options;
  const owned: number[][] = Array.from({ length: writers }, () => []);
  for (const id of model.records.keys()) owned[id % writers]?.push(id);
  const floor = model.highestId;
  let stopped = false;
  let answered = 0;

  const fresh = (w: number, n: number, kind: string): Value => {
    const value = {
      name: `${tag}Nam${kind}${w}x${n}`,
      age: Math.floor(random() * 151),
      city: `${tag}Cit${kind}${w}x${n}`,
    };
    model.sentValues.add(value.name).add(value.city);
    return value;
  };

  const expectRecord = (reply: Reply, value: Value, what: string) => {
    const record = reply.body?.data?.[0];
    if (JSON.stringify(reply.body) !== JSON.stringify({ data: [{ ...value, age: String(value.age) }] })) {
      model.violations.push(`${what} answered ${JSON.stringify(reply.body)} for ${JSON.stringify(value)} (${record})`);
    }
  };

  const writer = async (w: number) => {
    const mine = owned[w] as number[];
    let lastCreated = floor;
    for (let n = 0; n < perWriter && !stopped; n++) {
      const roll = random();
      const asJson = random() < 0.3;
      const index = Math.floor(random() * mine.length);
      const id = mine[index];
      try {
        if (id === undefined || roll < 0.55) {
          const value = fresh(w, n, 'c');
          model.pendingCreates.set(value.name, value);
          const reply = await send(url, 'POST', '/users', value, asJson);
          model.count(reply.status);
          // A 503 may come after the write reached the database: it stays possible.
          if (reply.status === 503) continue;
          model.pendingCreates.delete(value.name);
          if (reply.status !== 200) {
            model.violations.push(`POST ${value.name} answered ${reply.status}: ${JSON.stringify(reply.body)}`);
            continue;
          }
          const created = Number(/^\/users\/(\d+)$/.exec(reply.location ?? '')?.[1]);
          expectRecord(reply, value, `POST ${value.name}`);
          if (!(created > floor)) model.violations.push(`POST answered id ${created}, not above ${floor}`);
          if (model.records.has(created)) model.violations.push(`POST answered id ${created} twice`);
          // One writer's creates are sequential, so their ids must increase.
          if (created <= lastCreated) model.violations.push(`POST answered id ${created} after ${lastCreated}`);
          lastCreated = created;
          model.records.set(created, value);
          model.answered.create++;
          mine.push(created);
        } else {
          const current = model.records.get(id) as Value;
          const method = roll < 0.75 ? 'PATCH' : roll < 0.87 ? 'PUT' : 'DELETE';
          const next =
            method === 'DELETE'
              ? null
              : method === 'PUT'
                ? fresh(w, n, 'p')
                : { ...current, city: fresh(w, n, 'u').city, age: Math.floor(random() * 151) };
          model.maybe.set(id, [...(model.maybe.get(id) ?? []), next]);
          const patch = next === null ? undefined : method === 'PATCH' ? { ...next, name: current.name } : next;
          const reply = await sendWrite(url, method, id, patch, asJson);
          model.count(reply.status);
          if (reply.status === 503) continue;
          if (reply.status !== 200) {
            model.maybe.delete(id);
            model.violations.push(`${method} /users/${id} answered ${reply.status}: ${JSON.stringify(reply.body)}`);
            continue;
          }
          // After an uncertain PUT (503) the name a PATCH leaves may be either; the answer says which.
          const options = [current, ...(model.maybe.get(id) ?? [])];
          const name = method === 'PATCH' ? (reply.body?.data?.[0]?.name as unknown) : undefined;
          const kept = options.find((option) => option !== null && option.name === name);
          const stored = next !== null && method === 'PATCH' && kept ? { ...next, name: kept.name } : next;
          model.maybe.delete(id);
          expectRecord(reply, stored ?? current, `${method} /users/${id}`);
          if (stored === null) {
            model.records.delete(id);
            mine.splice(index, 1);
            model.answered.delete++;
          } else {
            model.records.set(id, stored);
            model.answered[method === 'PUT' ? 'put' : 'patch']++;
          }
        }
        answered++;
      } catch {
        return; // the server is gone; what was in flight stays uncertain in the model
      }
    }
  };

  const running = Promise.all(Array.from({ length: writers }, (_, w) => writer(w)));
  return {
    answered: () => answered,
    stop: async () => {
      stopped = true;
      await running;
    },
  };
}

/** PATCH sends only the changed fields (city and age); PUT all three; DELETE none. */
function sendWrite(url: string, method: string, id: number, value: Value | undefined, asJson: boolean) {
  if (method !== 'PATCH' || value === undefined) return send(url, method, `/users/${id}`, value, asJson);
  const changes = { age: value.age, city: value.city };
  if (asJson) {
    return fetch(`${url}/users/${id}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(changes),
    }).then(readReply);
  }
  const query = new URLSearchParams({ age: String(changes.age), city: changes.city });
  return fetch(`${url}/users/${id}?${query}`, { method }).then(readReply);
}

async function readReply(answer: Response): Promise<Reply> {
  const text = await answer.text();
  const type = answer.headers.get('content-type') ?? '';
  return {
    status: answer.status,
    location: answer.headers.get('location'),
    body: type.includes('json') && text !== '' ? JSON.parse(text) : text,
  };
}
