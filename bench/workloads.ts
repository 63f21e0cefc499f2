import type { Request } from 'autocannon';
import { CITIES } from './seed-data.ts';

export type WorkloadName = 'create' | 'list' | 'read' | 'mix' | 'healthz';

export const WORKLOAD_LABELS: Record<WorkloadName, string> = {
  create: 'create',
  list: 'list all',
  read: 'read one',
  mix: '90/10 read/write',
  healthz: 'GET /healthz',
};

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
  }
}
