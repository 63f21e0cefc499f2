// The typed client of the users API: openapi-fetch over the types openapi-typescript generates from
// the service's own OpenAPI document (client/schema.ts; `npm run client` makes it again).
import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './schema.ts';

export type { components, paths };
/** A record as the API shows it (`fields` picks which keys). */
export type User = components['schemas']['User'];
/** Every error: RFC 9457 problem details. */
export type Problem = components['schemas']['Problem'];
/**
 * The media types the client reads: it parses every body as JSON (sending no Accept, which the
 * service answers with JSON), so the CSV and NDJSON forms of `GET /users` are left out of its types.
 */
export type JsonMedia = 'application/json' | 'application/problem+json';
export type UsersClient = Client<paths, JsonMedia>;

export interface ClientOptions {
  /** A read or write token, when the service has tokens configured. */
  token?: string;
  /** Another fetch (for tests, or a proxy's). */
  fetch?: typeof globalThis.fetch;
}

/**
 * A client for the service at `baseUrl` (`http://127.0.0.1:3000`). Query parameters are sent as the
 * service reads them: each once, form style (`name=Ada&age=36`).
 */
export function createUsersClient(baseUrl: string, options: ClientOptions = {}): UsersClient {
  return createClient<paths, JsonMedia>({
    baseUrl,
    headers: options.token === undefined ? {} : { authorization: `Bearer ${options.token}` },
    querySerializer: { array: { style: 'form', explode: false }, object: { style: 'form', explode: true } },
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
}

/** The query of the next page from a `Link: <...>; rel="next"` header: its `cursor`, or its `after`. */
export function nextPage(link: string | null): { cursor: string } | { after: number } | undefined {
  const target = /<([^>]*)>;\s*rel="next"/.exec(link ?? '')?.[1];
  if (target === undefined) return undefined;
  const query = new URL(target, 'http://localhost').searchParams;
  const cursor = query.get('cursor');
  const after = query.get('after');
  return cursor !== null ? { cursor } : after !== null ? { after: Number(after) } : undefined;
}
