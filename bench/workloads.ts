import type { Request } from 'autocannon';
import { CITIES } from './seed-data.ts';

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

export type WorkloadName = 'create' | 'list' | 'page' | 'read' | 'mix' | 'healthz' | QueryWorkload | 'count-city';

export const WORKLOAD_LABELS: Record<WorkloadName, string> = {
  create: 'create',
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
};

/** Workloads measured at another number of connections than the run's. */
export const WORKLOAD_CONNECTIONS: Partial<Record<WorkloadName, number>> = { 'count-city': 1 };

const COUNT = { prefer: 'count=exact' };

/** How a system takes a create: the contract's query string, or json-server's JSON body. */
export type CreateStyle = 'query' | 'json';

let serial = 0;

/** A create with a name never sent before in this run. */
function createRequest(style: CreateStyle, request: Request): Request {
  serial += 1;
  const city = CITIES[serial % CITIES.length] as string;
  request.method = 'POST';
  if (style === 'query') {
    request.path = `/users?name=bench${serial}&age=${serial % 151}&city=${city}`;
    request.body = undefined;
  } else {
    request.path = '/users';
    request.headers = { ...request.headers, 'content-type': 'application/json' };
    request.body = JSON.stringify({ name: `bench${serial}`, age: String(serial % 151), city });
  }
  return request;
}

/** A read of an id picked at random among the seeded ones (ids run from 1 to records). */
function readRequest(records: number, request: Request): Request {
  request.method = 'GET';
  request.path = `/users/${1 + Math.floor(Math.random() * records)}`;
  delete request.body;
  return request;
}

const random = (below: number) => Math.floor(Math.random() * below);

/** One query request; the seeded records are `user<i>`, age i % 151, city CITIES[i % 8] (seed-data.ts). */
function queryRequest(workload: QueryWorkload | 'count-city', records: number): Request {
  switch (workload) {
    case 'range': {
      const from = random(141);
      return { method: 'GET', path: `/users?age.gte=${from}&age.lt=${from + 10}&limit=50` };
    }
    case 'search':
      // `ser123` is in user123, user1230..user1239, ...: more matches than a page as records grow.
      return { method: 'GET', path: `/users?q=ser${1 + random(records)}&limit=50` };
    case 'count':
      return { method: 'GET', path: `/users?age=${random(151)}&limit=50`, headers: COUNT };
    case 'count-city':
      return { method: 'GET', path: `/users?city=${CITIES[random(CITIES.length)]}&limit=1`, headers: COUNT };
    default:
      return { method: 'GET', path: `/users?sort=${SORTS[workload]}&limit=50` };
  }
}

// Reads cycle through a fixed list per connection, prebuilt so the generator spends no time on them.
const READS_PER_CONNECTION = 1000;

/**
 * One connection's autocannon request list. Creates must all differ, so they are built as they go
 * (setupRequest); reads are random ids drawn once per connection.
 */
export function workloadRequests(workload: WorkloadName, records: number, style: CreateStyle): Request[] {
  const reads = Math.max(1, records);
  switch (workload) {
    case 'list':
      return [{ method: 'GET', path: '/users' }];
    case 'page':
      // The first 100 in creation order: the page a peer's listing answers by default (Directus's limit).
      return [{ method: 'GET', path: '/users?limit=100' }];
    case 'healthz':
      return [{ method: 'GET', path: '/healthz' }];
    case 'create':
      return [{ setupRequest: (request) => createRequest(style, request) }];
    case 'read':
      return Array.from({ length: READS_PER_CONNECTION }, () => readRequest(reads, {}));
    case 'mix':
      return [
        {
          setupRequest: (request) =>
            Math.random() < 0.1 ? createRequest(style, request) : readRequest(reads, request),
        },
      ];
    default:
      return Array.from({ length: READS_PER_CONNECTION }, () => queryRequest(workload, reads));
  }
}
