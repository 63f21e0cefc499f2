/** The sizes the service reads, each defined once; messages, the OpenAPI document and docs/api.md derive from them. */

/** The longest request target (path and query). */
export const URL_LIMIT = 8 * 1024;
/** The largest request body. */
export const BODY_LIMIT = 64 * 1024;
/** The request line and headers together (Node's own limit, which the server keeps). */
export const HEADER_LIMIT = 16 * 1024;

/** A size in KiB for messages: `8 KiB`. */
export function kib(bytes: number): string {
  return `${bytes / 1024} KiB`;
}

/** The most records one POST /users may create (a JSON array or NDJSON lines). */
export const MAX_BATCH = 1000;
/**
 * The largest body of a POST /users, which may carry a batch: MAX_BATCH records of the longest
 * names and cities, written as UTF-8 (about 1.6 MB), fit.
 */
export const BATCH_BODY_LIMIT = 2 * 1024 * 1024;
