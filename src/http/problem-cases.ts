import type { ProblemCode } from './problem.ts';

/**
 * When each problem type is answered, in a line of Markdown: the "when" column of docs/api.md's
 * table of problem types (scripts/generate-docs.ts writes it; test/docs/readme.test.ts checks it). Typed by
 * `ProblemCode`, so a new problem type does not compile until it is described here.
 */
export const PROBLEM_CASES: Record<ProblemCode, string> = {
  'invalid-input': 'a parameter is missing, unknown, repeated, malformed or out of its rules',
  'malformed-request': 'the body is not valid JSON, the URL is badly encoded, the request is not valid HTTP',
  'unsupported-media-type': 'a non-empty body that is neither JSON nor a form',
  unauthorized:
    'tokens are configured and the request has none, or a wrong one (a JWT expired, not yet valid, badly signed, from another issuer or for another audience); see `WWW-Authenticate`, whose `error_description` says why for a JWT',
  forbidden: 'a read token on a write, or a JWT without the scope the method needs',
  'cross-origin-write':
    "a change sent from another site's page (a browser's `Origin` or `Sec-Fetch-Site`) whose origin is not in `CORS_ORIGINS`",
  'not-found': 'no record with that id, an id that is not a positive integer, an unknown path',
  'method-not-allowed': 'the path does not serve the method; see `Allow`',
  'not-acceptable':
    '`GET /users` with an `Accept` that no type it answers satisfies (`application/json`, `text/csv`, `application/x-ndjson`)',
  'request-timeout': 'the request (headers and body) did not fully arrive within `REQUEST_TIMEOUT_MS`',
  'idempotency-key-record-deleted': 'an `Idempotency-Key` sent again after the record it created was deleted',
  'range-exhausted':
    "a write would take a number past its end: a new id or the change version past 999,999,999,999,999 (export, and import into a new database to count again: a restore keeps the count, an import gives new ids), or a record's version past 2,147,483,647 (delete it and create it anew); nothing changed",
  'precondition-failed': '`If-Match` did not match',
  'payload-too-large': 'a body over 64 KiB (2 MiB for `POST /users`), or a batch of more than 1,000 records',
  'uri-too-long': 'a URL over 8 KiB',
  'expectation-failed': 'an `Expect` header other than `100-continue`',
  'misdirected-request': 'a `Host` the service does not answer to (see `ALLOWED_HOSTS`; this stops DNS rebinding)',
  'idempotency-key-reused': 'an `Idempotency-Key` sent again with other input',
  'event-id-expired':
    '`GET /users/events` was asked to resume after an id the change log no longer holds (older than `CHANGES_RETENTION`, or from before a restore): list the records again, then follow from now',
  'rate-limited': 'the client went over `RATE_LIMIT` requests this minute; see `Retry-After`',
  'too-many-streams': 'the client already holds `MAX_SUBSCRIBERS_PER_CLIENT` event streams; see `Retry-After`',
  'headers-too-large': 'the request line and headers are too large (16 KiB)',
  internal: 'a fault of the service; the cause is logged, never shown',
  unavailable:
    'the database does not answer or failed, the service is shutting down, or a JWT could not be checked because the identity provider’s keys could not be fetched; see `Retry-After`. For a write its **outcome is unknown**: a commit can fail after its data reached the disk, so the change may have been stored. Check the record, or repeat a `POST` with the same `Idempotency-Key` (stored at most once). On SQLite a write not taken within `DATABASE_TIMEOUT_MS` of its asking (another process held the write lock, or the writes queued before it took that long) is known not stored, and its detail says so',
  overloaded: 'the service is falling behind (its event loop runs over `OVERLOAD_LAG_MS` late); see `Retry-After`',
  'too-many-listings': 'SQLite: `SQLITE_READ_QUEUE` listings already wait for a reader thread; see `Retry-After`',
  'listing-timeout':
    'SQLite: the listing or count was not read within `DATABASE_TIMEOUT_MS` and was given up (a search of one or two characters, or a filter or sort no index serves, reads every record); see `Retry-After`',
};
