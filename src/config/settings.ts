import type { KeyObject } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { type DatabaseConfig, parseDatabaseUrl } from './database-url.ts';
import { parseClaimName, parseJwksUrl, parsePublicKey, parseScope } from './jwt.ts';
import { duration, integer, Invalid, type Kind, oneOf, text } from './kinds.ts';
import {
  type ApiToken,
  parseHosts,
  parseOrigins,
  parseProxies,
  parseTokens,
  parseWebhookSecret,
  parseWebhookUrls,
  readTokenFile,
} from './values.ts';

/** One setting: its environment variable, its flag, its rule, its default and what it means. */
export interface Setting<T> {
  /** The environment variable; the flag is its kebab-case (`DATABASE_URL` → `--database-url`). */
  env: string;
  kind: Kind<T>;
  /** The default as a user would write it, parsed like any value; none: `unset` applies. */
  default?: string;
  /** The value when the setting is neither given nor defaulted. */
  unset?: T;
  /** What the default means when it is not a plain value (shown in `--help` and docs/operations.md). */
  defaultText?: string;
  /** What it does, in a sentence or two, Markdown allowed, its links written from docs/operations.md, where the table is shown; `--help` shows it as plain text. */
  help: string;
  /** Holds secrets: a value is never echoed in a message. */
  secret?: boolean;
  /** An empty value is refused rather than read as unset (so `API_TOKENS=` cannot turn authentication off). */
  emptyIsError?: boolean;
}

function setting<T>(definition: Setting<T>): Setting<T> {
  return definition;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const nonEmpty = (rule: string) => (value: string) => (value.trim() === '' ? new Invalid(`must be ${rule}`) : value);

/**
 * Every setting of the service, once. The parser, its messages, `--help`, the settings
 * table of docs/operations.md (checked by test/docs/readme.test.ts) and the docs all derive from this table. Order is the
 * order they are shown in.
 */
export const SETTINGS = {
  port: setting({ env: 'PORT', kind: integer(0, 65535), default: '3000', help: 'TCP port; `0` picks a free one' }),
  host: setting({
    env: 'HOST',
    kind: text('a host name or IP address to listen on', nonEmpty('a host name or IP address to listen on')),
    default: '127.0.0.1',
    help: 'address to listen on',
  }),
  database: setting<DatabaseConfig>({
    env: 'DATABASE_URL',
    kind: text('a postgres:// URL, file:PATH, a path or :memory:', (value) => {
      const parsed = parseDatabaseUrl(value);
      return typeof parsed === 'string' ? new Invalid(parsed) : parsed;
    }),
    default: './data/users.db',
    secret: true,
    help: 'PostgreSQL: `postgres://USER:PASSWORD@HOST:PORT/DATABASE` (or `postgresql://`, with libpq-style parameters such as `?sslmode=require`). SQLite: `file:PATH`, `file:///abs/path`, a plain path, or `:memory:` (throwaway, one process only)',
  }),
  databaseTimeoutMs: setting({
    env: 'DATABASE_TIMEOUT_MS',
    kind: integer(100, 600_000, { unit: 'milliseconds' }),
    default: '5000',
    help: 'the longest one database call may wait. PostgreSQL: statement timeout, and the wait for a connection; a connection that goes silent is given up one second later. SQLite: how long a write may wait for the write lock another process holds, counted from when it was asked (queued behind other writes included; then 503, and it is not stored), how long a migration at start may wait for it, and the longest a listing or count may take on a reader thread, waiting for one included (then 503 `/problems/listing-timeout`). Then the request gets 503',
  }),
  databasePoolSize: setting({
    env: 'DATABASE_POOL_SIZE',
    kind: integer(1, 1000),
    default: '10',
    help: 'PostgreSQL connections per process; see [scaling.md](scaling.md) for budgets',
  }),
  sqliteReaders: setting({
    env: 'SQLITE_READERS',
    kind: integer(1, 64),
    default: '2',
    help: 'SQLite: threads per process that read listings other than a plain page (a filter, a search, a sort) and counts, each with its own connection, so that none holds the event loop; see [security.md](security.md#heavy-listings)',
  }),
  sqliteReadQueue: setting({
    env: 'SQLITE_READ_QUEUE',
    kind: integer(1, 100_000),
    default: '100',
    help: 'SQLite: listings and counts that may wait for a reader thread, per process; one more is answered 503 `/problems/too-many-listings` with `Retry-After` at once',
  }),
  listingCacheMb: setting({
    env: 'LISTING_CACHE_MB',
    kind: integer(0, 65_536, { unit: 'megabytes' }),
    default: '256',
    help: 'memory for the kept copy of the full listing (`GET /users`); a larger listing is streamed from the database every time, and `0` keeps none. A million typical records take about 50 MB',
  }),
  workers: setting({
    env: 'WORKERS',
    kind: integer(1, 256, { words: { auto: availableParallelism() }, wordsRule: 'auto (one per core)' }),
    default: '1',
    help: 'processes serving the port; they share the database',
  }),
  logLevel: setting<LogLevel>({ env: 'LOG_LEVEL', kind: oneOf(LOG_LEVELS), default: 'info', help: 'what is logged' }),
  logBufferMb: setting({
    env: 'LOG_BUFFER_MB',
    kind: integer(1, 1024, { unit: 'megabytes' }),
    default: '16',
    help: 'log output held while stdout is read too slowly; past it, lines are dropped and counted rather than held without bound (see [Logs, health and metrics](#logs-health-and-metrics))',
  }),
  shutdownDelayMs: setting({
    env: 'SHUTDOWN_DELAY_MS',
    kind: integer(0, 600_000, { unit: 'milliseconds' }),
    default: '0',
    help: 'after SIGTERM, how long the service goes on serving, `/readyz` answering 503, before it stops taking connections, so that load balancers stop sending to it first; a second SIGTERM, or SIGINT, ends the wait. See [operations.md: In production](#in-production)',
  }),
  shutdownTimeoutMs: setting({
    env: 'SHUTDOWN_TIMEOUT_MS',
    kind: integer(0, 600_000, { unit: 'milliseconds' }),
    default: '10000',
    help: 'how long SIGTERM/SIGINT waits for requests in flight before forcing exit (after `SHUTDOWN_DELAY_MS`)',
  }),
  requestTimeoutMs: setting({
    env: 'REQUEST_TIMEOUT_MS',
    kind: integer(1000, 600_000, { unit: 'milliseconds' }),
    default: '30000',
    help: 'how long a client may take to send a whole request; then 408 and the connection closes',
  }),
  headersTimeoutMs: setting({
    env: 'HEADERS_TIMEOUT_MS',
    kind: integer(1000, 600_000, { unit: 'milliseconds' }),
    default: '10000',
    defaultText: '`10000`, or `REQUEST_TIMEOUT_MS` if shorter',
    help: 'how long a client may take to send the request line and headers, at most `REQUEST_TIMEOUT_MS`; then 408',
  }),
  keepAliveTimeoutMs: setting({
    env: 'KEEP_ALIVE_TIMEOUT_MS',
    kind: integer(1000, 600_000, { unit: 'milliseconds' }),
    default: '5000',
    help: 'how long an idle keep-alive connection stays open; behind a load balancer, set it above the balancer’s idle timeout',
  }),
  rateLimit: setting({
    env: 'RATE_LIMIT',
    kind: integer(1, 100_000_000, { words: { off: null }, wordsRule: 'off' }),
    default: '6000',
    help: 'requests per minute per client address; over it: 429 with `Retry-After`. Wrong tokens are counted too, on every route: past this many a minute, a client gets 429 wherever a token is needed. Per process: see [security.md](security.md#limits)',
  }),
  overloadLagMs: setting({
    env: 'OVERLOAD_LAG_MS',
    kind: integer(0, 600_000, { unit: 'milliseconds' }),
    default: '500',
    help: 'when the event loop runs this many milliseconds late, requests are shed with 503 and `Retry-After` (`0` turns it off)',
  }),
  trustedProxies: setting({
    env: 'TRUST_PROXY',
    kind: text('IP addresses or CIDR ranges, comma-separated', parseProxies),
    unset: [] as readonly string[],
    help: 'addresses or CIDR ranges of proxies in front (`10.0.0.0/8,127.0.0.1`); their `X-Forwarded-For` then names the client, for the rate limit and the logs',
  }),
  allowedHosts: setting({
    env: 'ALLOWED_HOSTS',
    kind: text('host names or addresses, comma-separated, or *', parseHosts),
    unset: [] as readonly string[],
    defaultText: 'loopback names and `HOST`',
    help: 'the `Host` names clients may use (`users.example.com,10.0.0.5`), or `*` for any; others get 421, which stops DNS rebinding. Unset: `localhost`, `127.0.0.1`, `[::1]` and `HOST` (with `HOST=0.0.0.0` or `::`, every address of this machine and its host name). See [security.md](security.md#browsers)',
  }),
  apiTokens: setting<readonly ApiToken[] | undefined>({
    env: 'API_TOKENS',
    kind: text('scope:token entries, comma-separated', (value) =>
      value.trim() === ''
        ? new Invalid('is set but holds no tokens; to turn authentication off, leave API_TOKENS unset')
        : parseTokens(value.split(',')),
    ),
    secret: true,
    emptyIsError: true,
    help: 'bearer tokens, `scope:token` comma-separated (`read:<token>,write:<token>`), each token at least 32 characters; none: no authentication. See [Authentication](security.md#authentication)',
  }),
  apiTokensFile: setting<readonly ApiToken[] | undefined>({
    env: 'API_TOKENS_FILE',
    kind: text('a readable file of scope:token lines', readTokenFile),
    emptyIsError: true,
    help: 'a file with one `scope:token` a line (`#` comments allowed), instead of `API_TOKENS` (keeps tokens out of the process environment)',
  }),
  jwtJwksUrl: setting<URL | undefined>({
    env: 'JWT_JWKS_URL',
    kind: text('an https:// URL', parseJwksUrl),
    emptyIsError: true,
    help: 'tokens from an identity provider (JWT), checked against the keys it publishes at this URL (its `jwks_uri`; https, or http to loopback only); needs `JWT_ISSUER` and `JWT_AUDIENCE`, works beside `API_TOKENS`. See [JWT](security.md#tokens-from-an-identity-provider-jwt)',
  }),
  jwtPublicKey: setting<{ key: KeyObject; algorithms: readonly string[] } | undefined>({
    env: 'JWT_PUBLIC_KEY',
    kind: text('PEM text or the path of a PEM file', parsePublicKey),
    // A private key pasted by mistake must not be echoed in a message.
    secret: true,
    emptyIsError: true,
    help: 'instead of `JWT_JWKS_URL`: the one public key that signs tokens, as PEM text (`-----BEGIN PUBLIC KEY-----`) or the path of a PEM file; RSA (2048 bits or more), EC P-256/P-384/P-521 or Ed25519',
  }),
  jwtIssuer: setting<string | undefined>({
    env: 'JWT_ISSUER',
    kind: text('the issuer (iss) tokens must carry', nonEmpty('the issuer (iss) tokens must carry')),
    help: 'with JWT: the `iss` every token must carry, exactly (the provider’s issuer URL); required',
  }),
  jwtAudience: setting<string | undefined>({
    env: 'JWT_AUDIENCE',
    kind: text('the audience (aud) tokens must name', nonEmpty('the audience (aud) tokens must name')),
    help: 'with JWT: the `aud` every token must name (this service’s identifier at the provider); required, so a token issued for another application is refused',
  }),
  jwtScopeClaim: setting({
    env: 'JWT_SCOPE_CLAIM',
    kind: text('a claim name', parseClaimName),
    default: 'scope',
    help: 'with JWT: the claim holding the token’s scopes, a space-separated string or an array of strings (`scp`, `permissions` with some providers)',
  }),
  jwtReadScope: setting({
    env: 'JWT_READ_SCOPE',
    kind: text('one scope', parseScope),
    default: 'users:read',
    help: 'with JWT: the scope that lets a token read (`GET`, `HEAD`, `OPTIONS`), as a `read` API token',
  }),
  jwtWriteScope: setting({
    env: 'JWT_WRITE_SCOPE',
    kind: text('one scope', parseScope),
    default: 'users:write',
    help: 'with JWT: the scope that lets a token do everything, as a `write` API token (it reads too)',
  }),
  jwtClockSkewMs: setting({
    env: 'JWT_CLOCK_SKEW',
    kind: duration(0, 300_000, '0s to 5m'),
    default: '30s',
    help: 'with JWT: how far the provider’s clock may be from this machine’s when `exp` and `nbf` are checked',
  }),
  jwtJwksMaxAgeMs: setting({
    env: 'JWT_JWKS_MAX_AGE',
    kind: duration(1000, 86_400_000, '1s to 1d'),
    default: '10m',
    help: 'with `JWT_JWKS_URL`: how long the fetched keys are used before they are fetched again, so a key the provider removed is refused at most this long after',
  }),
  jwtJwksCooldownMs: setting({
    env: 'JWT_JWKS_COOLDOWN',
    kind: duration(1000, 3_600_000, '1s to 1h'),
    default: '10s',
    help: 'with `JWT_JWKS_URL`: the least time between two fetches of the keys, whatever tokens with unknown key ids (`kid`) arrive, and after a fetch that failed (then 503)',
  }),
  jwtJwksTimeoutMs: setting({
    env: 'JWT_JWKS_TIMEOUT_MS',
    kind: integer(100, 60_000, { unit: 'milliseconds' }),
    default: '5000',
    help: 'with `JWT_JWKS_URL`: how long one fetch of the keys may take; a slower or failed one answers 503',
  }),
  corsOrigins: setting({
    env: 'CORS_ORIGINS',
    kind: text('origins such as https://app.example.com, comma-separated, or *', parseOrigins),
    unset: [] as readonly string[],
    help: 'origins browsers may call the API from (`https://app.example.com,http://localhost:5173`), or `*`; none: CORS is off, and writes sent from other sites’ pages are refused',
  }),
  changesRetentionMs: setting({
    env: 'CHANGES_RETENTION',
    kind: duration(1000, 366 * 86_400_000, '1s to 366d'),
    default: '7d',
    help: 'how long the change log keeps each change for `GET /users/events` to resume from (`Last-Event-ID`); older ids answer 410. See [changes.md](changes.md)',
  }),
  maxSubscribers: setting({
    env: 'MAX_SUBSCRIBERS',
    kind: integer(0, 1_000_000),
    default: '1000',
    help: 'open `GET /users/events` streams per process; past it, 503 with `Retry-After`',
  }),
  maxSubscribersPerClient: setting({
    env: 'MAX_SUBSCRIBERS_PER_CLIENT',
    kind: integer(1, 1_000_000),
    default: '100',
    help: 'open `GET /users/events` streams per client (its address, IPv6 by /64, the forwarded one behind `TRUST_PROXY`; with tokens, its address and token), so one client cannot take every place; past it, 429 `/problems/too-many-streams` with `Retry-After`. A page opens one to a few; the default leaves room for many people behind one NAT address',
  }),
  eventsBufferMb: setting({
    env: 'EVENTS_BUFFER_MB',
    kind: integer(1, 65_536, { unit: 'megabytes' }),
    default: '64',
    help: 'memory for events that `GET /users/events` clients have not yet taken, all streams together. Each stream may hold its share (this divided by the open streams, at most 1 MiB); a stream past its share is ended with a comment saying to reconnect with `Last-Event-ID`. See [changes.md](changes.md)',
  }),
  eventsHeartbeatMs: setting({
    env: 'EVENTS_HEARTBEAT_MS',
    kind: integer(1000, 600_000, { unit: 'milliseconds' }),
    default: '15000',
    help: 'an idle event stream gets a comment line this often, so proxies keep it open',
  }),
  webhookUrls: setting({
    env: 'WEBHOOK_URLS',
    kind: text('http or https URLs, comma-separated', parseWebhookUrls),
    unset: [] as readonly string[],
    // A receiver's URL may carry a secret path: never echoed in a message.
    secret: true,
    help: "receivers of every change, POSTed as signed Standard Webhooks, in order and at least once per URL; needs `WEBHOOK_SECRET`. After a URL's `#`, the listing's filters (`https://hooks.example/in#city=Paris`) send it only the changes of matching records. See [changes.md](changes.md#webhooks)",
  }),
  webhookSecret: setting<Buffer | undefined>({
    env: 'WEBHOOK_SECRET',
    kind: text('whsec_ and base64', parseWebhookSecret),
    secret: true,
    emptyIsError: true,
    help: 'the key webhooks are signed with (HMAC-SHA256): `whsec_` and the base64 of 24 to 64 random bytes, as receivers using the `standardwebhooks` package expect',
  }),
  webhookTimeoutMs: setting({
    env: 'WEBHOOK_TIMEOUT_MS',
    kind: integer(100, 600_000, { unit: 'milliseconds' }),
    default: '10000',
    help: 'how long one delivery may take before it counts as failed and is retried',
  }),
} as const;

export type SettingKey = keyof typeof SETTINGS;

/** The flag of a setting: `DATABASE_URL` → `database-url`. */
export function flagOf(definition: Setting<unknown>): string {
  return definition.env.toLowerCase().replaceAll('_', '-');
}
