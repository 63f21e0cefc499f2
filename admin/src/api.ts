import { createUsersClient, nextPage, type Problem, type UsersClient } from '../../client/index.ts';

/** A record as the page shows it: the listing's fields with its id. */
export interface Row {
  id: number;
  name: string;
  age: string;
  city: string;
}

export type RecordInput = Pick<Row, 'name' | 'age' | 'city'>;

/** Where a page starts: the first page, after an id (creation order), or a sorted listing's cursor. */
export type PageStart = Record<string, never> | { after: number } | { cursor: string };

export interface Filters {
  name: string;
  age: string;
  city: string;
  q: string;
  sort: string;
  limit: number;
}

export const NO_FILTERS: Filters = { name: '', age: '', city: '', q: '', sort: '', limit: 25 };

export interface Page {
  rows: Row[];
  next: PageStart | undefined;
}

/** A record read for editing: its values and the ETag that If-Match sends back. */
export interface Versioned {
  row: Row;
  etag: string;
}

/** An answer other than 2xx, as the page needs it: the problem, and how long to wait when told. */
export class ApiError extends Error {
  readonly status: number;
  readonly problem: Partial<Problem>;
  /** Retry-After, in seconds, on a 429 or 503. */
  readonly retryAfter: number | undefined;

  constructor(status: number, problem: Partial<Problem>, retryAfter: number | undefined) {
    super(problem.detail ?? `The service answered ${status}.`);
    this.status = status;
    this.problem = problem;
    this.retryAfter = retryAfter;
  }
}

/** No answer at all: the service is down or the network is. */
export class Unreachable extends Error {
  constructor() {
    super('The service cannot be reached. Check that it is running, then try again.');
  }
}

const FIELDS = 'id,name,age,city';

/** The version in a record's ETag (`"12-3.<fingerprint>"` is version 3 of record 12). */
export function versionOf(etag: string): string {
  return /^"\d+-(\d+)\./.exec(etag)?.[1] ?? etag;
}

/**
 * An age as typed, for the service to judge: the document calls it an integer, but the service reads
 * the text (`030`, and refuses `1e2`), and the page must not turn bad input into a number.
 */
const typed = (age: string) => age as unknown as number;

/** The filters, search and sort set, as the listing's query takes them. */
function filterQuery(filters: Filters) {
  const age = filters.age.trim();
  return {
    ...(filters.name.trim() === '' ? {} : { name: filters.name.trim() }),
    ...(age === '' ? {} : { age: typed(age) }),
    ...(filters.city.trim() === '' ? {} : { city: filters.city.trim() }),
    ...(filters.q.trim() === '' ? {} : { q: filters.q.trim() }),
    ...(filters.sort === '' ? {} : { sort: filters.sort }),
  };
}

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The answer of a call, or the ApiError / Unreachable it comes to. */
async function settled<T>(call: Promise<Answer<T>>): Promise<{ data: T | undefined; response: Response }> {
  let answer: Answer<T>;
  try {
    answer = await call;
  } catch (error) {
    if (error instanceof DOMException && error.name === 'AbortError') throw error;
    throw new Unreachable();
  }
  const { response } = answer;
  if (!response.ok) {
    const wait = Number(response.headers.get('retry-after'));
    const problem = typeof answer.error === 'object' && answer.error !== null ? (answer.error as Partial<Problem>) : {};
    throw new ApiError(response.status, problem, Number.isFinite(wait) && wait > 0 ? wait : undefined);
  }
  return { data: answer.data, response };
}

function required<T>(data: T | undefined): T {
  if (data === undefined) throw new ApiError(502, { detail: 'The service answered without a body.' }, undefined);
  return data;
}

/** The one record of an answer's `{"data":[...]}` envelope. */
function single(data: { data: unknown[] } | undefined): Row {
  const [record] = required(data).data;
  if (record === undefined) throw new ApiError(502, { detail: 'The service answered no record.' }, undefined);
  return record as Row;
}

/** The service's API as the page uses it, through the typed client, with the signed-in token. */
export class Api {
  readonly client: UsersClient;

  constructor(baseUrl: string, token: string | undefined) {
    this.client = createUsersClient(baseUrl, {
      ...(token === undefined ? {} : { token }),
      // The records may be personal: the browser keeps no copy of any answer on disk.
      fetch: (input, init) => fetch(new Request(input, { ...init, cache: 'no-store' })),
    });
  }

  async list(filters: Filters, start: PageStart): Promise<Page> {
    const { data, response } = await settled(
      this.client.GET('/users', {
        params: { query: { ...filterQuery(filters), fields: FIELDS, limit: filters.limit, ...start } },
      }),
    );
    const rows = required(data).data as Row[];
    return { rows, next: nextPage(response.headers.get('link')) };
  }

  /**
   * Every record the filters, search and sort pick, with the fields the page shows, as the service
   * writes CSV (`Accept: text/csv`): one request, which the service streams however many match.
   */
  async exportCsv(filters: Filters): Promise<Blob> {
    const { data } = await settled(
      this.client.GET('/users', {
        params: { query: { ...filterQuery(filters), fields: FIELDS } },
        headers: { accept: 'text/csv' },
        parseAs: 'blob',
      }),
    );
    return required(data);
  }

  /** How many records match the filters (a separate request, so the page never waits for it). */
  async count(filters: Filters): Promise<number> {
    const query = { ...filterQuery(filters), limit: 1, fields: 'id' };
    const { response } = await settled(
      this.client.GET('/users', { params: { query, header: { prefer: 'count=exact' } } }),
    );
    const total = response.headers.get('x-total-count');
    if (total === null) throw new ApiError(502, { detail: 'The service answered no count.' }, undefined);
    return Number(total);
  }

  async read(id: number): Promise<Versioned> {
    const { data, response } = await settled(
      this.client.GET('/users/{id}', { params: { path: { id }, query: { fields: FIELDS } } }),
    );
    return { row: single(data), etag: response.headers.get('etag') ?? '' };
  }

  /** Adds a record; sent again with the same `key`, it is stored once (an answer lost on the way). */
  async create(input: RecordInput, key: string): Promise<Row> {
    const { data } = await settled(
      this.client.POST('/users', {
        params: {
          query: { ...input, age: typed(input.age), fields: FIELDS },
          header: { 'idempotency-key': key },
        },
      }),
    );
    return single(data);
  }

  /** Replaces the record if it is still at the version `etag` names (412 otherwise). */
  async replace(id: number, input: RecordInput, etag: string): Promise<Versioned> {
    const { data, response } = await settled(
      this.client.PUT('/users/{id}', {
        params: {
          path: { id },
          query: { ...input, age: typed(input.age), fields: FIELDS },
          header: { 'if-match': etag },
        },
      }),
    );
    return { row: single(data), etag: response.headers.get('etag') ?? '' };
  }

  /**
   * Deletes the record if it is still at the version `etag` names (412 otherwise), and answers it as
   * the service held it when it was deleted.
   */
  async remove(id: number, etag: string): Promise<Row> {
    const { data } = await settled(
      this.client.DELETE('/users/{id}', {
        params: { path: { id }, query: { fields: FIELDS }, header: { 'if-match': etag } },
      }),
    );
    return single(data);
  }

  /** Whether this token may write (`GET /auth/scope`). */
  async mayWrite(): Promise<boolean> {
    const { data } = await settled(this.client.GET('/auth/scope'));
    return required(data).scope === 'write';
  }

  /** The change stream's answer, from just after `lastId` when given. */
  async events(lastId: string | undefined, signal: AbortSignal): Promise<ReadableStream<Uint8Array>> {
    const { response } = await settled(
      this.client.GET('/users/events', {
        params: { header: lastId === undefined ? {} : { 'last-event-id': lastId } },
        parseAs: 'stream',
        signal,
      }),
    );
    if (response.body === null) throw new Unreachable();
    return response.body;
  }
}
