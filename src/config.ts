import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { type Static, Type } from 'typebox';
import { Compile } from 'typebox/compile';

/** Every setting: its environment variable, its flag, its rule. The README's table mirrors it. */
const ConfigSchema = Type.Object(
  {
    PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
    HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
    DATABASE_URL: Type.String({ minLength: 1, default: './data/users.db' }),
    LOG_LEVEL: Type.Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { default: 'info' }),
    LOG_BUFFER_MB: Type.Integer({ minimum: 1, maximum: 1024, default: 16 }),
    SHUTDOWN_TIMEOUT_MS: Type.Integer({ minimum: 0, maximum: 600_000, default: 10_000 }),
    REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 1000, maximum: 600_000, default: 30_000 }),
    DATABASE_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 600_000, default: 5000 }),
    DATABASE_POOL_SIZE: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
    LISTING_CACHE_MB: Type.Integer({ minimum: 0, maximum: 65_536, default: 256 }),
    WORKERS: Type.Union([Type.Integer({ minimum: 1, maximum: 256 }), Type.Literal('auto')], { default: 1 }),
    HEADERS_TIMEOUT_MS: Type.Integer({ minimum: 1000, maximum: 600_000, default: 10_000 }),
    KEEP_ALIVE_TIMEOUT_MS: Type.Integer({ minimum: 1000, maximum: 600_000, default: 5000 }),
    RATE_LIMIT: Type.Union([Type.Integer({ minimum: 1, maximum: 100_000_000 }), Type.Literal('off')], {
      default: 6000,
    }),
    OVERLOAD_LAG_MS: Type.Integer({ minimum: 0, maximum: 600_000, default: 500 }),
    API_TOKENS: Type.Optional(Type.String()),
    API_TOKENS_FILE: Type.Optional(Type.String({ minLength: 1 })),
    CORS_ORIGINS: Type.Optional(Type.String()),
    TRUST_PROXY: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
type RawConfig = Static<typeof ConfigSchema>;
const checkConfig = Compile(ConfigSchema);

export type LogLevel = RawConfig['LOG_LEVEL'];

export type DatabaseConfig = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

export interface Config {
  port: number;
  host: string;
  database: DatabaseConfig;
  logLevel: LogLevel;
  /** The most log output held while standard output is slow; more is dropped and counted. */
  logBufferMb: number;
  shutdownTimeoutMs: number;
  requestTimeoutMs: number;
  /** The longest one database call may wait: statement, connection, or a lock held elsewhere. */
  databaseTimeoutMs: number;
  /** PostgreSQL connections per process. */
  databasePoolSize: number;
  /** The most memory the kept copy of the full listing may take; 0 keeps none. */
  listingCacheMb: number;
  /** Processes serving the port. */
  workers: number;
  /** The longest the request line and headers may take to arrive. */
  headersTimeoutMs: number;
  /** How long an idle keep-alive connection stays open. */
  keepAliveTimeoutMs: number;
  /** Requests per minute per client address; `null`: no limit. */
  rateLimit: number | null;
  /** Event-loop delay above which requests are shed with 503; 0 sheds none. */
  overloadLagMs: number;
  /** Bearer tokens; none: authentication is off. Never log these. */
  tokens: readonly ApiToken[];
  /** Origins allowed by CORS; none: CORS is off; `*`: any origin. */
  corsOrigins: readonly string[];
  /** Proxy addresses (or CIDR ranges) whose X-Forwarded-For names the client; none: trust no proxy. */
  trustedProxies: readonly string[];
}

export type Scope = 'read' | 'write';

export interface ApiToken {
  scope: Scope;
  token: string;
}

const FLAGS = {
  port: 'PORT',
  host: 'HOST',
  'database-url': 'DATABASE_URL',
  'log-level': 'LOG_LEVEL',
  'log-buffer-mb': 'LOG_BUFFER_MB',
  'shutdown-timeout-ms': 'SHUTDOWN_TIMEOUT_MS',
  'request-timeout-ms': 'REQUEST_TIMEOUT_MS',
  'database-timeout-ms': 'DATABASE_TIMEOUT_MS',
  'database-pool-size': 'DATABASE_POOL_SIZE',
  'listing-cache-mb': 'LISTING_CACHE_MB',
  workers: 'WORKERS',
  'headers-timeout-ms': 'HEADERS_TIMEOUT_MS',
  'keep-alive-timeout-ms': 'KEEP_ALIVE_TIMEOUT_MS',
  'rate-limit': 'RATE_LIMIT',
  'overload-lag-ms': 'OVERLOAD_LAG_MS',
  'api-tokens': 'API_TOKENS',
  'api-tokens-file': 'API_TOKENS_FILE',
  'cors-origins': 'CORS_ORIGINS',
  'trust-proxy': 'TRUST_PROXY',
} as const satisfies Record<string, keyof RawConfig>;

const INTEGER_SETTINGS = new Set<string>([
  'PORT',
  'LOG_BUFFER_MB',
  'SHUTDOWN_TIMEOUT_MS',
  'REQUEST_TIMEOUT_MS',
  'DATABASE_TIMEOUT_MS',
  'DATABASE_POOL_SIZE',
  'LISTING_CACHE_MB',
  'WORKERS',
  'HEADERS_TIMEOUT_MS',
  'KEEP_ALIVE_TIMEOUT_MS',
  'RATE_LIMIT',
  'OVERLOAD_LAG_MS',
]);
/** Settings that also take a word instead of a number. */
const WORDS: Record<string, string> = { WORKERS: 'auto', RATE_LIMIT: 'off' };

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Reads settings from the environment, overridden by flags (`--port 8080`); throws ConfigError. */
export function loadConfig(env: Record<string, string | undefined>, argv: string[]): Readonly<Config> {
  const raw: Record<string, unknown> = {};
  for (const name of Object.values(FLAGS)) {
    const value = env[name];
    if (value !== undefined && value !== '') raw[name] = value;
  }
  const problems = new Map<string, string>();
  let flags: Record<string, string | undefined> = {};
  try {
    const options = Object.fromEntries(Object.keys(FLAGS).map((flag) => [flag, { type: 'string' as const }]));
    flags = parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values as Record<
      string,
      string | undefined
    >;
  } catch (error) {
    const known = Object.keys(FLAGS).map((flag) => `--${flag}`);
    problems.set('flags', `${(error as Error).message}. Known flags: ${known.join(', ')}`);
  }
  for (const [flag, name] of Object.entries(FLAGS)) {
    const value = flags[flag];
    if (value !== undefined) raw[name] = value;
  }
  for (const name of INTEGER_SETTINGS) {
    const value = raw[name];
    if (value === undefined) continue;
    if (typeof value === 'string' && /^[0-9]{1,9}$/.test(value)) raw[name] = Number(value);
    else if (value === WORDS[name]) continue;
    else problems.set(name, `${name} must be a whole number, got ${JSON.stringify(value)}`);
  }
  // Unset, the headers timeout follows a shorter request timeout down; set, it must fit inside it.
  const headersTimeoutGiven = raw.HEADERS_TIMEOUT_MS !== undefined;
  for (const [name, property] of Object.entries(ConfigSchema.properties)) {
    if (raw[name] === undefined || problems.has(name)) raw[name] = 'default' in property ? property.default : undefined;
  }
  for (const error of checkConfig.Errors(raw)) {
    const name = error.instancePath.slice(1);
    if (name !== '' && !problems.has(name)) {
      problems.set(name, `${name} ${describe(name)}, got ${JSON.stringify(raw[name])}`);
    }
  }
  const database = problems.has('DATABASE_URL') ? undefined : parseDatabaseUrl(String(raw.DATABASE_URL));
  if (typeof database === 'string') problems.set('DATABASE_URL', database);
  const workers = raw.WORKERS === 'auto' ? availableParallelism() : Number(raw.WORKERS);
  if (workers > 1 && typeof database === 'object' && database.kind === 'sqlite' && database.path === ':memory:') {
    problems.set('WORKERS', 'WORKERS above 1 needs a shared database; :memory: is private to each process');
  }
  if (!problems.has('HEADERS_TIMEOUT_MS') && Number(raw.HEADERS_TIMEOUT_MS) > Number(raw.REQUEST_TIMEOUT_MS)) {
    if (headersTimeoutGiven) {
      problems.set('HEADERS_TIMEOUT_MS', 'HEADERS_TIMEOUT_MS must not be longer than REQUEST_TIMEOUT_MS');
    } else raw.HEADERS_TIMEOUT_MS = raw.REQUEST_TIMEOUT_MS;
  }
  const tokens = readTokens(raw, problems);
  const corsOrigins = parseOrigins(raw.CORS_ORIGINS, problems);
  const trustedProxies = parseProxies(raw.TRUST_PROXY, problems);
  if (problems.size > 0 || database === undefined || typeof database === 'string') {
    throw new ConfigError(`invalid settings:\n  - ${[...problems.values()].join('\n  - ')}`);
  }
  const valid = raw as RawConfig;
  return Object.freeze({
    port: valid.PORT,
    host: valid.HOST,
    database: Object.freeze(database),
    logLevel: valid.LOG_LEVEL,
    logBufferMb: valid.LOG_BUFFER_MB,
    shutdownTimeoutMs: valid.SHUTDOWN_TIMEOUT_MS,
    requestTimeoutMs: valid.REQUEST_TIMEOUT_MS,
    databaseTimeoutMs: valid.DATABASE_TIMEOUT_MS,
    databasePoolSize: valid.DATABASE_POOL_SIZE,
    listingCacheMb: valid.LISTING_CACHE_MB,
    workers,
    headersTimeoutMs: valid.HEADERS_TIMEOUT_MS,
    keepAliveTimeoutMs: valid.KEEP_ALIVE_TIMEOUT_MS,
    rateLimit: valid.RATE_LIMIT === 'off' ? null : valid.RATE_LIMIT,
    overloadLagMs: valid.OVERLOAD_LAG_MS,
    tokens,
    corsOrigins,
    trustedProxies,
  });
}

/** `TRUST_PROXY`: comma-separated addresses or CIDR ranges (`10.0.0.0/8`). */
function parseProxies(value: unknown, problems: Map<string, string>): string[] {
  if (typeof value !== 'string' || value.trim() === '') return [];
  const proxies = value.split(',').map((proxy) => proxy.trim());
  for (const proxy of proxies) {
    const [address = '', bits, ...rest] = proxy.split('/');
    const version = isIP(address);
    const maxBits = version === 6 ? 128 : 32;
    const bitsOk = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= maxBits);
    if (version === 0 || !bitsOk || rest.length > 0) {
      problems.set(
        'TRUST_PROXY',
        `TRUST_PROXY must be comma-separated IP addresses or CIDR ranges such as 10.0.0.0/8, got ${JSON.stringify(proxy)}`,
      );
    }
  }
  return proxies;
}

const TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * `API_TOKENS` (`read:abc,write:def`) or `API_TOKENS_FILE` (one `scope:token` a line; blank lines
 * and `#` comments allowed). Messages name the entry by position, never by its token.
 */
function readTokens(raw: Record<string, unknown>, problems: Map<string, string>): ApiToken[] {
  const inline = raw.API_TOKENS as string | undefined;
  const file = raw.API_TOKENS_FILE as string | undefined;
  if (inline !== undefined && file !== undefined) {
    problems.set('API_TOKENS', 'set API_TOKENS or API_TOKENS_FILE, not both');
    return [];
  }
  let name = 'API_TOKENS';
  let entries: string[] = [];
  if (inline !== undefined) entries = inline.split(',').map((entry) => entry.trim());
  if (file !== undefined) {
    name = 'API_TOKENS_FILE';
    try {
      entries = readFileSync(file, 'utf8')
        .split(/\r?\n/)
        .map((line) => line.trim())
        .filter((line) => line !== '' && !line.startsWith('#'));
    } catch (error) {
      problems.set(name, `API_TOKENS_FILE cannot be read: ${(error as Error).message}`);
      return [];
    }
    if (entries.length === 0) problems.set(name, `API_TOKENS_FILE ${JSON.stringify(file)} holds no tokens`);
  }
  const tokens: ApiToken[] = [];
  const seen = new Set<string>();
  entries.forEach((entry, index) => {
    const colon = entry.indexOf(':');
    const scope = entry.slice(0, colon);
    const token = entry.slice(colon + 1);
    const where = `${name} entry ${index + 1}`;
    if (colon === -1 || (scope !== 'read' && scope !== 'write')) {
      problems.set(name, `${where} must be scope:token with scope read or write`);
    } else if (!TOKEN.test(token)) {
      problems.set(name, `${where}: a token is letters, digits and - . _ ~ + / (optionally ending in =)`);
    } else if (seen.has(token)) {
      problems.set(name, `${where} repeats a token given before`);
    } else {
      seen.add(token);
      tokens.push(Object.freeze({ scope, token }));
    }
  });
  return tokens;
}

/** `CORS_ORIGINS`: comma-separated origins (`https://app.example.com`), or `*` for any. */
function parseOrigins(value: unknown, problems: Map<string, string>): string[] {
  if (typeof value !== 'string' || value.trim() === '') return [];
  const origins = value.split(',').map((origin) => origin.trim());
  if (origins.length === 1 && origins[0] === '*') return ['*'];
  for (const origin of origins) {
    const parsed = URL.canParse(origin) ? new URL(origin) : undefined;
    if (parsed === undefined || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin) {
      problems.set(
        'CORS_ORIGINS',
        `CORS_ORIGINS must be * or comma-separated origins such as https://app.example.com, got ${JSON.stringify(origin)}`,
      );
    }
  }
  return origins;
}

function describe(name: string): string {
  switch (name) {
    case 'PORT':
      return 'must be a port number from 0 to 65535';
    case 'HOST':
      return 'must be a host name or IP address to listen on';
    case 'LOG_LEVEL':
      return 'must be one of fatal, error, warn, info, debug, trace, silent';
    case 'LOG_BUFFER_MB':
      return 'must be a whole number of megabytes from 1 to 1024';
    case 'SHUTDOWN_TIMEOUT_MS':
      return 'must be a whole number of milliseconds up to 600000';
    case 'REQUEST_TIMEOUT_MS':
      return 'must be a whole number of milliseconds from 1000 to 600000';
    case 'DATABASE_TIMEOUT_MS':
      return 'must be a whole number of milliseconds from 100 to 600000';
    case 'DATABASE_POOL_SIZE':
      return 'must be a whole number from 1 to 1000';
    case 'LISTING_CACHE_MB':
      return 'must be a whole number of megabytes from 0 to 65536';
    case 'WORKERS':
      return 'must be a whole number from 1 to 256, or auto (one per core)';
    case 'HEADERS_TIMEOUT_MS':
    case 'KEEP_ALIVE_TIMEOUT_MS':
      return 'must be a whole number of milliseconds from 1000 to 600000';
    case 'RATE_LIMIT':
      return 'must be a whole number of requests per minute from 1 to 100000000, or off';
    case 'OVERLOAD_LAG_MS':
      return 'must be a whole number of milliseconds up to 600000 (0 turns shedding off)';
    default:
      return 'is invalid';
  }
}

/**
 * `postgres://` (or `postgresql://`) for PostgreSQL; `file:PATH`, a plain path or `:memory:` for
 * SQLite. Returns a message when the URL is not usable; a message never shows a password.
 */
export function parseDatabaseUrl(url: string): DatabaseConfig | string {
  if (url === ':memory:' || url === 'file::memory:') return { kind: 'sqlite', path: ':memory:' };
  if (/^postgres(ql)?:\/\//i.test(url)) {
    if (!URL.canParse(url)) {
      return `DATABASE_URL: not a usable PostgreSQL URL: ${JSON.stringify(hideCredentials(url))}; expected postgres://USER:PASSWORD@HOST:PORT/DATABASE`;
    }
    return { kind: 'postgres', url };
  }
  if (url.startsWith('file://')) {
    const parsed = URL.canParse(url) ? new URL(url) : undefined;
    if (parsed === undefined || (parsed.host !== '' && parsed.host !== 'localhost')) {
      return 'DATABASE_URL: a file:// URL takes an absolute path (file:///var/lib/users.db); for a relative path use file:PATH';
    }
    return { kind: 'sqlite', path: decodeURIComponent(parsed.pathname) };
  }
  if (url.startsWith('file:')) return { kind: 'sqlite', path: url.slice('file:'.length) || './data/users.db' };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    return `DATABASE_URL: unsupported scheme in ${JSON.stringify(hideCredentials(url))}; use postgres://..., file:PATH, a path, or :memory:`;
  }
  return { kind: 'sqlite', path: url };
}

/** The URL with any user and password hidden, for messages and logs. */
export function hideCredentials(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}
