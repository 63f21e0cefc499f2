import { AGES, dataset, seedCities, seedRecord } from './seed-data.ts';
import type { RequestPlan } from './wrk.ts';

/** Pages of 50 sorted by each field (descending where that is the costlier walk), and the other queries. */
const SORTS = {
  'sort-id': '-id',
  'sort-name': '-name',
  'sort-age': '-age',
  'sort-city': 'city',
  'sort-created': '-createdAt',
  'sort-updated': 'updatedAt',
} as const;
export const QUERY_WORKLOADS = [
  ...(Object.keys(SORTS) as Array<keyof typeof SORTS>),
  'range',
  'search',
  'count',
] as const;
export type QueryWorkload = (typeof QUERY_WORKLOADS)[number];

export type WorkloadName =
  'create' | 'create-64' | 'list' | 'page' | 'read' | 'mix' | 'healthz' | QueryWorkload | 'count-city' | 'stats-city';

export const WORKLOAD_LABELS: Record<WorkloadName, string> = {
  create: 'create',
  'create-64': 'create, 64 connections',
  list: 'list all',
  page: 'page of 100',
  read: 'read one',
  mix: '90/10 read/write',
  healthz: 'GET /healthz',
  ...(Object.fromEntries(Object.entries(SORTS).map(([name, sort]) => [name, `page of 50, sort=${sort}`])) as Record<
    keyof typeof SORTS,
    string
  >),
  range: 'page of 50, age.gte/age.lt range',
  search: 'page of 50, q= search',
  count: 'page of 50 by age, with count=exact',
  'count-city': 'count=exact of one city, 1 connection',
  'stats-city': 'GET /users/stats?group=city, every city, 1 connection',
};

/** Workloads measured at another number of connections than the run's. */
export const WORKLOAD_CONNECTIONS: Partial<Record<WorkloadName, number>> = {
  'count-city': 1,
  'stats-city': 1,
  'create-64': 64,
};

const COUNT = { prefer: 'count=exact' };

/** How a system takes a create: the contract's query string, or json-server's JSON body. */
export type CreateStyle = 'query' | 'json';

/** Cities for creates, taken from the seeded ones. */
const CREATE_CITIES = 16;

/** Creates with a name never sent before in this run (`bench<serial>`, see bench/wrk/workload.lua). */
export function createPlan(style: CreateStyle): NonNullable<RequestPlan['create']> {
  const cities = seedCities().slice(0, CREATE_CITIES);
  return style === 'query'
    ? { method: 'POST', path: '/users?name=bench{n}&age={age}&city={city}', cities: cities.map(encodeURIComponent) }
    : {
        method: 'POST',
        path: '/users',
        body: '{"name":"bench{n}","age":"{age}","city":{city}}',
        cities: cities.map((city) => JSON.stringify(city)),
        headers: { 'content-type': 'application/json' },
      };
}

const random = (below: number) => Math.floor(Math.random() * below);

/** A word of a seeded record's name, as a person looking someone up types it (the surname, mostly). */
function searchTerm(records: number): string {
  const words = seedRecord(1 + random(records)).name.split(' ');
  return words.at(-1) ?? '';
}

/**
 * One query request. Realistic data: ages 18 to 90, a seeded city, a word of a seeded name.
 * Synthetic data (`user<i>`, age i % 151): `ser123` is in user123, user1230..user1239, ...: more
 * matches than a page as records grow, the worst case of a substring search.
 */
function queryPath(workload: QueryWorkload | 'count-city', records: number): string {
  const synthetic = dataset() === 'synthetic';
  const age = () => (synthetic ? random(151) : AGES.min + random(AGES.count));
  switch (workload) {
    case 'range': {
      const from = synthetic ? random(141) : AGES.min + random(AGES.count - 10);
      return `/users?age.gte=${from}&age.lt=${from + 10}&limit=50`;
    }
    case 'search':
      return `/users?q=${encodeURIComponent(synthetic ? `ser${1 + random(records)}` : searchTerm(records))}&limit=50`;
    case 'count':
      return `/users?age=${age()}&limit=50`;
    case 'count-city': {
      const cities = seedCities();
      return `/users?city=${encodeURIComponent(cities[random(cities.length)] as string)}&limit=1`;
    }
    default:
      return `/users?sort=${SORTS[workload]}&limit=50`;
  }
}

// Queries cycle through a fixed list, prebuilt so the generator spends no time on them.
const QUERIES_PER_RUN = 10_000;

/** What wrk sends for a workload (bench/wrk/workload.lua): fixed GETs, random reads, creates or the mix. */
export function workloadPlan(workload: WorkloadName, records: number, style: CreateStyle): RequestPlan {
  const read = { records: Math.max(1, records), prefix: '/users/' };
  switch (workload) {
    case 'list':
      return { gets: ['/users'], createShare: 0 };
    case 'page':
      // The first 100 in creation order: the page a peer's listing answers by default (Directus's limit).
      return { gets: ['/users?limit=100'], createShare: 0 };
    case 'healthz':
      return { gets: ['/healthz'], createShare: 0 };
    case 'create':
    case 'create-64':
      return { create: createPlan(style), createShare: 1 };
    case 'read':
      return { read, createShare: 0 };
    case 'mix':
      return { read, create: createPlan(style), createShare: 0.1 };
    case 'stats-city':
      // Every city in one answer (realistic data has 440 of them; the cap is 1,000): the whole table grouped.
      return { gets: ['/users/stats?group=city&limit=1000'], createShare: 0 };
    default:
      return {
        gets: Array.from({ length: QUERIES_PER_RUN }, () => queryPath(workload, read.records)),
        headers: workload === 'count' || workload === 'count-city' ? COUNT : undefined,
        createShare: 0,
      };
  }
}

/** The plan with a system's own headers (a bearer token) on every request, creates included. */
export function withHeaders(plan: RequestPlan, headers: Record<string, string> | undefined): RequestPlan {
  if (headers === undefined) return plan;
  return {
    ...plan,
    headers: { ...plan.headers, ...headers },
    ...(plan.create === undefined
      ? {}
      : { create: { ...plan.create, headers: { ...plan.create.headers, ...headers } } }),
  };
}
