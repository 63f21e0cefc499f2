import { Connection, NoAnswer, type Reply } from './client.ts';

/** A record as the default fields show it; `null` once deleted. */
export type Shown = { name: string; age: string; city: string } | null;

/** What concurrent writers know the database must hold, and what it may hold. */
export interface Ledger {
  /** Each record's state as its last answered (200) write left it. */
  answered: Map<number, Shown>;
  /** Records whose last write got no 200: they may show that write's state instead. */
  maybe: Map<number, Shown>;
  /** Names of creates that got no 200: each may be stored once, or not at all. */
  maybeCreated: Set<string>;
  /** Writes answered 200. */
  writes: number;
  /** Every request's outcome: a status, or `no answer`. */
  outcomes: Map<string, number>;
  /** Answers that are neither a 200 nor a clean 503 problem, and truncated answers. */
  failures: string[];
}

/**
 * `connections` clients, each creating, changing, deleting and reading records of its own on one
 * keep-alive connection, until told to stop. A client stops at its first answer that is not a 200
 * (the service is going away), so each record has at most one write in doubt.
 */
export function startLedgerWriters(url: string, connections: number, prefix: string) {
  const ledger: Ledger = {
    answered: new Map(),
    maybe: new Map(),
    maybeCreated: new Set(),
    writes: 0,
    outcomes: new Map(),
    failures: [],
  };
  let stopped = false;
  const count = (outcome: string) => ledger.outcomes.set(outcome, (ledger.outcomes.get(outcome) ?? 0) + 1);

  /** The reply when it is a 200; otherwise records what came and returns undefined. */
  const judge = (what: string, reply: Reply | NoAnswer): Reply | undefined => {
    if (reply instanceof NoAnswer) {
      count(reply.status === undefined ? 'no answer' : `${reply.status} cut short`);
      if (reply.status !== undefined) ledger.failures.push(reply.message);
      return undefined;
    }
    count(String(reply.status));
    if (reply.status === 200) return reply;
    const type = String(reply.headers['content-type']);
    if (reply.status !== 503 || !type.startsWith('application/problem+json')) {
      ledger.failures.push(`${what}: ${reply.status} ${type} ${reply.body.toString().slice(0, 200)}`);
    }
    return undefined;
  };

  const client = async (c: number) => {
    const connection = new Connection(url);
    const mine: number[] = [];
    const send = (method: string, path: string) =>
      connection.send(method, path, { timeoutMs: 30_000 }).catch((error: NoAnswer) => error);
    try {
      for (let n = 0; !stopped && n < 1_000_000; n++) {
        const roll = n % 20;
        const id = mine[n % Math.max(mine.length, 1)];
        if (id === undefined || roll < 8) {
          const record = { name: `${prefix}n${c}x${n}`, age: String(n % 151), city: `${prefix}c${c}` };
          const reply = judge('POST', await send('POST', `/users?${new URLSearchParams(record)}`));
          if (reply === undefined) return ledger.maybeCreated.add(record.name);
          const created = Number(/^\/users\/(\d+)$/.exec(String(reply.headers.location))?.[1]);
          ledger.answered.set(created, record);
          ledger.writes++;
          mine.push(created);
        } else if (roll < 14) {
          const record = { ...(ledger.answered.get(id) as NonNullable<Shown>), age: String(n % 151) };
          if (n % 3 === 0) record.name = `${prefix}m${c}x${n}`;
          const reply = judge('PATCH', await send('PATCH', `/users/${id}?name=${record.name}&age=${record.age}`));
          if (reply === undefined) return ledger.maybe.set(id, record);
          ledger.answered.set(id, record);
          ledger.writes++;
        } else if (roll < 17) {
          const reply = judge('DELETE', await send('DELETE', `/users/${id}`));
          if (reply === undefined) return ledger.maybe.set(id, null);
          ledger.answered.set(id, null);
          ledger.writes++;
          mine.splice(mine.indexOf(id), 1);
        } else {
          const path = roll === 17 ? `/users/${id}` : `/users?city=${prefix}c${c}&limit=100`;
          if (judge('GET', await send('GET', path)) === undefined) return;
        }
      }
    } finally {
      connection.close();
    }
  };
  const running = Promise.all(Array.from({ length: connections }, (_, c) => client(c)));
  return {
    ledger,
    /** Resolves once every client has stopped. */
    stop: async () => {
      stopped = true;
      await running;
    },
  };
}

/**
 * What is wrong with the stored records (`stored`: id to record, those starting with the writers'
 * prefix) given the ledger: an answered write lost, a record stored twice or from nowhere. Also
 * counts the writes in doubt (no 200) that were applied all the same.
 */
export function checkLedger(
  ledger: Ledger,
  stored: Map<number, NonNullable<Shown>>,
): { problems: string[]; appliedInDoubt: number } {
  const problems: string[] = [];
  let appliedInDoubt = 0;
  const same = (a: Shown | undefined, b: Shown | undefined) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
  for (const [id, expected] of ledger.answered) {
    const actual = stored.get(id) ?? null;
    if (same(actual, expected)) continue;
    if (ledger.maybe.has(id) && same(actual, ledger.maybe.get(id))) {
      appliedInDoubt++;
      continue;
    }
    problems.push(`record ${id}: answered as ${JSON.stringify(expected)}, stored as ${JSON.stringify(actual)}`);
  }
  const names = new Map<string, number>();
  for (const [id, record] of stored) {
    names.set(record.name, (names.get(record.name) ?? 0) + 1);
    if (ledger.maybeCreated.has(record.name)) appliedInDoubt++;
    else if (!ledger.answered.has(id)) {
      problems.push(`record ${id} ${JSON.stringify(record)} was never answered nor in doubt`);
    }
  }
  for (const name of ledger.maybeCreated) {
    if ((names.get(name) ?? 0) > 1) problems.push(`${name} is stored ${names.get(name)} times`);
  }
  return { problems, appliedInDoubt };
}
