import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type Config, ConfigError, loadConfig } from '../../src/config/load.ts';
import { tempDir } from '../helpers/server.ts';

type Env = Record<string, string | undefined>;

const DEFAULTS: Config = {
  port: 3000,
  host: '127.0.0.1',
  database: { kind: 'sqlite', path: './data/users.db' },
  logLevel: 'info',
  logBufferMb: 16,
  shutdownDelayMs: 0,
  shutdownTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  databaseTimeoutMs: 5000,
  databasePoolSize: 10,
  sqliteReaders: 2,
  sqliteReadQueue: 100,
  listingCacheMb: 256,
  workers: 1,
  headersTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5000,
  rateLimit: 6000,
  overloadLagMs: 500,
  tokens: [],
  jwt: undefined,
  corsOrigins: [],
  trustedProxies: [],
  allowedHosts: [],
  changesRetentionMs: 7 * 86_400_000,
  maxSubscribers: 1000,
  maxSubscribersPerClient: 100,
  eventsBufferMb: 64,
  eventsHeartbeatMs: 15_000,
  webhookUrls: [],
  webhookSecret: undefined,
  webhookTimeoutMs: 10_000,
};

const scratch = tempDir('user-records-config-');
process.once('exit', scratch.cleanup);
const tokenFile = join(scratch.dir, 'tokens');
writeFileSync(
  tokenFile,
  '# service tokens\nread:r3adT0ken-4f9c2b7e1d8a6053-kq7xw\n\n  write:wr1te_token-9b3e5c1a7f2d4068-zm4=  \n',
);
const emptyTokenFile = join(tokenFile, '..', 'empty');
// Keys for the JWT settings, made once: a public key as PEM text and in a file, a private key, a weak one.
const rsaPair = generateKeyPairSync('rsa', { modulusLength: 2048 });
const publicPem = rsaPair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
const privatePem = rsaPair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const weakPem = generateKeyPairSync('rsa', { modulusLength: 1024 })
  .publicKey.export({ type: 'spki', format: 'pem' })
  .toString();
const x25519Pem = generateKeyPairSync('x25519').publicKey.export({ type: 'spki', format: 'pem' }).toString();
const publicKeyFile = join(scratch.dir, 'provider.pem');
writeFileSync(publicKeyFile, publicPem);
const JWT_BASE = { JWT_ISSUER: 'https://id.example.test/', JWT_AUDIENCE: 'user-records' };
writeFileSync(emptyTokenFile, '# nothing yet\n');

interface ValidRow {
  name: string;
  env?: Env;
  argv?: string[];
  /** The settings that differ from DEFAULTS. */
  expected: Partial<Config>;
}

const validRows: ValidRow[] = [
  { name: 'nothing set: the defaults', expected: {} },
  { name: 'empty values count as unset', env: { PORT: '', HOST: '', DATABASE_URL: '', LOG_LEVEL: '' }, expected: {} },
  {
    name: 'every environment variable',
    env: {
      PORT: '8081',
      HOST: '0.0.0.0',
      DATABASE_URL: '/var/lib/users.db',
      LOG_LEVEL: 'debug',
      SHUTDOWN_TIMEOUT_MS: '2500',
    },
    expected: {
      port: 8081,
      host: '0.0.0.0',
      database: { kind: 'sqlite', path: '/var/lib/users.db' },
      logLevel: 'debug',
      shutdownTimeoutMs: 2500,
    },
  },
  { name: 'PORT 0 (ephemeral)', env: { PORT: '0' }, expected: { port: 0 } },
  { name: 'PORT 65535', env: { PORT: '65535' }, expected: { port: 65535 } },
  {
    name: 'flags override the environment',
    env: { PORT: '1111', HOST: 'localhost', DATABASE_URL: 'env.db', LOG_LEVEL: 'warn' },
    argv: ['--port', '8080', '--host', '::1', '--database-url', 'flag.db', '--log-level', 'trace'],
    expected: { port: 8080, host: '::1', database: { kind: 'sqlite', path: 'flag.db' }, logLevel: 'trace' },
  },
  {
    name: 'flags in --name=value form',
    argv: ['--port=9090', '--log-level=silent', '--shutdown-timeout-ms=0'],
    expected: { port: 9090, logLevel: 'silent', shutdownTimeoutMs: 0 },
  },
  {
    name: 'a flag overrides only its own setting',
    env: { PORT: '1111', LOG_LEVEL: 'warn' },
    argv: ['--port', '2222'],
    expected: { port: 2222, logLevel: 'warn' },
  },
  {
    name: 'DATABASE_URL file:PATH (relative)',
    env: { DATABASE_URL: 'file:data/other.db' },
    expected: { database: { kind: 'sqlite', path: 'data/other.db' } },
  },
  {
    name: 'DATABASE_URL file:PATH (absolute)',
    env: { DATABASE_URL: 'file:/srv/users.db' },
    expected: { database: { kind: 'sqlite', path: '/srv/users.db' } },
  },
  {
    name: 'DATABASE_URL file:///abs/path',
    env: { DATABASE_URL: 'file:///srv/data/users.db' },
    expected: { database: { kind: 'sqlite', path: '/srv/data/users.db' } },
  },
  {
    name: 'DATABASE_URL file:///abs/path with a percent-escape',
    env: { DATABASE_URL: 'file:///srv/my%20data/users.db' },
    expected: { database: { kind: 'sqlite', path: '/srv/my data/users.db' } },
  },
  {
    name: 'DATABASE_URL file://localhost/abs/path',
    env: { DATABASE_URL: 'file://localhost/srv/users.db' },
    expected: { database: { kind: 'sqlite', path: '/srv/users.db' } },
  },
  {
    name: 'DATABASE_URL plain relative path',
    env: { DATABASE_URL: './db/users.sqlite' },
    expected: { database: { kind: 'sqlite', path: './db/users.sqlite' } },
  },
  {
    name: 'DATABASE_URL plain absolute path',
    env: { DATABASE_URL: '/tmp/users.db' },
    expected: { database: { kind: 'sqlite', path: '/tmp/users.db' } },
  },
  {
    name: 'DATABASE_URL :memory:',
    env: { DATABASE_URL: ':memory:' },
    expected: { database: { kind: 'sqlite', path: ':memory:' } },
  },
  {
    name: '--database-url :memory:',
    argv: ['--database-url', ':memory:'],
    expected: { database: { kind: 'sqlite', path: ':memory:' } },
  },
  {
    name: 'DATABASE_URL postgres://',
    env: { DATABASE_URL: 'postgres://app:secret@db.internal:5432/users' },
    expected: { database: { kind: 'postgresql', url: 'postgres://app:secret@db.internal:5432/users' } },
  },
  {
    name: '--database-url postgresql:// with options',
    argv: ['--database-url', 'postgresql://db.internal/users?sslmode=require'],
    expected: { database: { kind: 'postgresql', url: 'postgresql://db.internal/users?sslmode=require' } },
  },
  {
    name: 'database timeout and pool size',
    env: { DATABASE_TIMEOUT_MS: '2500', DATABASE_POOL_SIZE: '40' },
    expected: { databaseTimeoutMs: 2500, databasePoolSize: 40 },
  },
  {
    name: '--database-timeout-ms and --database-pool-size',
    argv: ['--database-timeout-ms', '100', '--database-pool-size=1'],
    expected: { databaseTimeoutMs: 100, databasePoolSize: 1 },
  },
  { name: 'WORKERS=4', env: { WORKERS: '4' }, expected: { workers: 4 } },
  { name: 'LISTING_CACHE_MB=0 keeps no copy', env: { LISTING_CACHE_MB: '0' }, expected: { listingCacheMb: 0 } },
  { name: '--listing-cache-mb 1024', argv: ['--listing-cache-mb', '1024'], expected: { listingCacheMb: 1024 } },
  { name: 'LOG_BUFFER_MB=1', env: { LOG_BUFFER_MB: '1' }, expected: { logBufferMb: 1 } },
  {
    name: '--workers 2 on PostgreSQL',
    argv: ['--workers', '2', '--database-url', 'postgres://h/db'],
    expected: { workers: 2, database: { kind: 'postgresql', url: 'postgres://h/db' } },
  },
  { name: 'WORKERS=auto: one per core', env: { WORKERS: 'auto' }, expected: { workers: availableParallelism() } },
  {
    name: 'timeouts',
    env: { HEADERS_TIMEOUT_MS: '2000', KEEP_ALIVE_TIMEOUT_MS: '65000' },
    expected: { headersTimeoutMs: 2000, keepAliveTimeoutMs: 65_000 },
  },
  {
    name: 'a short REQUEST_TIMEOUT_MS takes the unset headers timeout with it',
    env: { REQUEST_TIMEOUT_MS: '2000' },
    expected: { requestTimeoutMs: 2000, headersTimeoutMs: 2000 },
  },
  { name: 'RATE_LIMIT=120', env: { RATE_LIMIT: '120' }, expected: { rateLimit: 120 } },
  { name: '--rate-limit off', argv: ['--rate-limit', 'off'], expected: { rateLimit: null } },
  { name: 'OVERLOAD_LAG_MS=0 sheds nothing', env: { OVERLOAD_LAG_MS: '0' }, expected: { overloadLagMs: 0 } },
  {
    name: 'API_TOKENS',
    env: { API_TOKENS: 'read:abc123def456ghi789jkl012mno345pq, write:def456ghi789jkl012mno345pqr678st' },
    expected: {
      tokens: [
        { scope: 'read', token: 'abc123def456ghi789jkl012mno345pq' },
        { scope: 'write', token: 'def456ghi789jkl012mno345pqr678st' },
      ],
    },
  },
  {
    name: '--api-tokens-file',
    argv: ['--api-tokens-file', tokenFile],
    expected: {
      tokens: [
        { scope: 'read', token: 'r3adT0ken-4f9c2b7e1d8a6053-kq7xw' },
        { scope: 'write', token: 'wr1te_token-9b3e5c1a7f2d4068-zm4=' },
      ],
    },
  },
  {
    name: 'CORS_ORIGINS',
    env: { CORS_ORIGINS: 'https://app.example.com,http://localhost:5173' },
    expected: { corsOrigins: ['https://app.example.com', 'http://localhost:5173'] },
  },
  { name: 'CORS_ORIGINS=*', env: { CORS_ORIGINS: '*' }, expected: { corsOrigins: ['*'] } },
  {
    name: 'ALLOWED_HOSTS, names lowercased and IPv6 in brackets',
    env: { ALLOWED_HOSTS: 'Users.Example.com, 10.0.0.5, ::1, [fd00::2]' },
    expected: { allowedHosts: ['users.example.com', '10.0.0.5', '[::1]', '[fd00::2]'] },
  },
  { name: 'ALLOWED_HOSTS=*', env: { ALLOWED_HOSTS: '*' }, expected: { allowedHosts: ['*'] } },
  {
    name: '--trust-proxy',
    argv: ['--trust-proxy', '127.0.0.1, 10.0.0.0/8,fd00::/8'],
    expected: { trustedProxies: ['127.0.0.1', '10.0.0.0/8', 'fd00::/8'] },
  },
];

interface InvalidRow {
  name: string;
  env?: Env;
  argv?: string[];
  /** Each must match the message. */
  messages: RegExp[];
  /** Must not appear in the message (secrets). */
  hidden?: string;
}

const invalidRows: InvalidRow[] = [
  ...['htps://hooks.example/services/T000/s3cret-path', 'ftp://hooks.example/s3cret-path', 's3cret-path'].map(
    (bad) => ({
      name: `a webhook URL that is not one is named by its place, not shown (${bad.slice(0, 8)}...)`,
      env: { WEBHOOK_URLS: `https://ok.example/hook,${bad}`, WEBHOOK_SECRET: `whsec_${'A'.repeat(32)}` },
      messages: [/WEBHOOK_URLS must be comma-separated http:\/\/ or https:\/\/ URLs .*; URL 2 is not \(not shown/],
      hidden: 's3cret-path',
    }),
  ),
  {
    name: 'JWT_JWKS_URL and JWT_PUBLIC_KEY together',
    env: { ...JWT_BASE, JWT_JWKS_URL: 'https://id.example.test/jwks', JWT_PUBLIC_KEY: publicPem },
    messages: [/JWT_JWKS_URL or JWT_PUBLIC_KEY, not both/],
    hidden: 'BEGIN PUBLIC KEY',
  },
  {
    name: 'JWT_JWKS_URL over plain http to another machine',
    env: { ...JWT_BASE, JWT_JWKS_URL: 'http://id.example.test/jwks' },
    messages: [/JWT_JWKS_URL must be https/, /127\.0\.0\.1/],
  },
  {
    name: 'JWT_JWKS_URL over plain http to a name that starts like loopback',
    env: { ...JWT_BASE, JWT_JWKS_URL: 'http://localhost.example.test/jwks' },
    messages: [/JWT_JWKS_URL must be https/],
  },
  {
    name: 'JWT_JWKS_URL of another scheme',
    env: { ...JWT_BASE, JWT_JWKS_URL: 'file:///etc/jwks' },
    messages: [/JWT_JWKS_URL/],
  },
  {
    name: 'JWT_JWKS_URL with a password',
    env: { ...JWT_BASE, JWT_JWKS_URL: 'https://u:pw@id.example.test/jwks' },
    messages: [/JWT_JWKS_URL must not hold a user name/],
  },
  { name: 'JWT_JWKS_URL set but empty', env: { ...JWT_BASE, JWT_JWKS_URL: '' }, messages: [/JWT_JWKS_URL/] },
  {
    name: 'JWT without an issuer',
    env: { JWT_AUDIENCE: 'user-records', JWT_JWKS_URL: 'https://id.example.test/jwks' },
    messages: [/JWT_ISSUER is required/],
  },
  {
    name: 'JWT without an audience',
    env: { JWT_ISSUER: 'https://id.example.test/', JWT_PUBLIC_KEY: publicPem },
    messages: [/JWT_AUDIENCE is required/],
  },
  {
    name: 'JWT settings without a source of keys',
    env: { ...JWT_BASE, JWT_SCOPE_CLAIM: 'scp' },
    messages: [/JWT_ISSUER, JWT_AUDIENCE, JWT_SCOPE_CLAIM are set, but neither JWT_JWKS_URL nor JWT_PUBLIC_KEY/],
  },
  {
    name: 'JWT_PUBLIC_KEY holding a private key',
    env: { ...JWT_BASE, JWT_PUBLIC_KEY: privatePem },
    messages: [/JWT_PUBLIC_KEY holds a private key/],
    hidden: privatePem.split('\n')[1],
  },
  {
    name: 'JWT_PUBLIC_KEY that is neither PEM nor a file',
    env: { ...JWT_BASE, JWT_PUBLIC_KEY: '/nonexistent/provider.pem' },
    messages: [/JWT_PUBLIC_KEY is neither PEM text nor a readable file/],
  },
  {
    name: 'JWT_PUBLIC_KEY with broken PEM',
    env: { ...JWT_BASE, JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----' },
    messages: [/JWT_PUBLIC_KEY is not a PEM public key/],
  },
  {
    name: 'JWT_PUBLIC_KEY of 1024-bit RSA',
    env: { ...JWT_BASE, JWT_PUBLIC_KEY: weakPem },
    messages: [/under 2048 bits/],
  },
  { name: 'JWT_PUBLIC_KEY of X25519', env: { ...JWT_BASE, JWT_PUBLIC_KEY: x25519Pem }, messages: [/x25519/] },
  {
    name: 'JWT_READ_SCOPE the same as JWT_WRITE_SCOPE',
    env: { ...JWT_BASE, JWT_PUBLIC_KEY: publicPem, JWT_READ_SCOPE: 'users', JWT_WRITE_SCOPE: 'users' },
    messages: [/must differ/],
  },
  {
    name: 'JWT_WRITE_SCOPE with a space',
    env: { ...JWT_BASE, JWT_PUBLIC_KEY: publicPem, JWT_WRITE_SCOPE: 'users write' },
    messages: [/JWT_WRITE_SCOPE must be one scope/],
  },
  {
    name: 'JWT_CLOCK_SKEW over 5 minutes',
    env: { ...JWT_BASE, JWT_PUBLIC_KEY: publicPem, JWT_CLOCK_SKEW: '10m' },
    messages: [/JWT_CLOCK_SKEW/],
  },
  {
    name: 'JWT_JWKS_COOLDOWN of 0',
    env: { ...JWT_BASE, JWT_JWKS_URL: 'https://id.example.test/jwks', JWT_JWKS_COOLDOWN: '0s' },
    messages: [/JWT_JWKS_COOLDOWN/],
  },
  { name: 'PORT=abc', env: { PORT: 'abc' }, messages: [/PORT/, /whole number/, /"abc"/] },
  { name: 'PORT=70000', env: { PORT: '70000' }, messages: [/PORT/, /0 to 65535/, /70000/] },
  { name: 'PORT=-1', env: { PORT: '-1' }, messages: [/PORT/, /"-1"/] },
  { name: 'PORT=8080.5', env: { PORT: '8080.5' }, messages: [/PORT/] },
  { name: '--port abc', argv: ['--port', 'abc'], messages: [/PORT/, /"abc"/] },
  { name: 'LOG_LEVEL=loud', env: { LOG_LEVEL: 'loud' }, messages: [/LOG_LEVEL/, /one of .*info/, /"loud"/] },
  { name: '--log-level loud', argv: ['--log-level', 'loud'], messages: [/LOG_LEVEL/, /"loud"/] },
  { name: 'SHUTDOWN_TIMEOUT_MS too large', env: { SHUTDOWN_TIMEOUT_MS: '700000' }, messages: [/SHUTDOWN_TIMEOUT_MS/] },
  { name: '--host with an empty value', argv: ['--host', ''], messages: [/HOST/] },
  { name: 'unknown flag --bogus', argv: ['--bogus'], messages: [/--bogus/, /--port/] },
  { name: 'unknown flag with a value', argv: ['--bogus=1', '--port', '8080'], messages: [/--bogus/] },
  { name: 'flag without its value', argv: ['--port'], messages: [/--port/] },
  { name: 'positional argument', argv: ['serve'], messages: [/serve/] },
  {
    name: 'postgres:// that is not a URL',
    env: { DATABASE_URL: 'postgres://app:hunter2@db internal:5432/users' },
    messages: [/DATABASE_URL/, /PostgreSQL URL/],
    hidden: 'hunter2',
  },
  {
    name: 'DATABASE_TIMEOUT_MS below 100',
    env: { DATABASE_TIMEOUT_MS: '99' },
    messages: [/DATABASE_TIMEOUT_MS/, /100/],
  },
  { name: 'DATABASE_POOL_SIZE=0', env: { DATABASE_POOL_SIZE: '0' }, messages: [/DATABASE_POOL_SIZE/, /1 to 1000/] },
  {
    name: 'LISTING_CACHE_MB above 65536',
    env: { LISTING_CACHE_MB: '70000' },
    messages: [/LISTING_CACHE_MB/, /megabytes/],
  },
  { name: 'LOG_BUFFER_MB=0', env: { LOG_BUFFER_MB: '0' }, messages: [/LOG_BUFFER_MB/, /1 to 1024/] },
  { name: 'WORKERS=0', env: { WORKERS: '0' }, messages: [/WORKERS/, /1 to 256, or auto/] },
  { name: 'WORKERS=many', argv: ['--workers', 'many'], messages: [/WORKERS/, /"many"/] },
  {
    name: 'WORKERS above 1 with :memory:',
    env: { WORKERS: '2', DATABASE_URL: ':memory:' },
    messages: [/WORKERS/, /:memory:/, /shared database/],
  },
  {
    name: 'mysql://',
    env: { DATABASE_URL: 'mysql://app:hunter2@db.internal/users' },
    messages: [/DATABASE_URL/, /unsupported scheme/, /mysql:/],
    hidden: 'hunter2',
  },
  // Other tools' SQLite spellings would otherwise be a relative path: a folder named `sqlite:`.
  {
    name: 'sqlite:PATH',
    env: { DATABASE_URL: 'sqlite:/tmp/x.db' },
    messages: [/DATABASE_URL/, /file:PATH/, /"sqlite:/],
  },
  { name: 'sqlite3://PATH', env: { DATABASE_URL: 'sqlite3:///tmp/x.db' }, messages: [/DATABASE_URL/, /sqlite3:/] },
  {
    name: 'HEADERS_TIMEOUT_MS longer than REQUEST_TIMEOUT_MS',
    env: { HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '10000' },
    messages: [/HEADERS_TIMEOUT_MS/, /REQUEST_TIMEOUT_MS/],
  },
  { name: 'KEEP_ALIVE_TIMEOUT_MS=0', env: { KEEP_ALIVE_TIMEOUT_MS: '0' }, messages: [/KEEP_ALIVE_TIMEOUT_MS/] },
  { name: 'RATE_LIMIT=lots', env: { RATE_LIMIT: 'lots' }, messages: [/RATE_LIMIT/, /"lots"/] },
  { name: 'RATE_LIMIT=0', env: { RATE_LIMIT: '0' }, messages: [/RATE_LIMIT/, /or off/] },
  {
    name: 'API_TOKENS with an unknown scope',
    env: { API_TOKENS: 'read:abc123def456ghi789jkl012mno345pq,admin:s3cret-value' },
    messages: [/API_TOKENS entry 2/, /read or write/],
    hidden: 's3cret-value',
  },
  {
    name: 'API_TOKENS with a token Bearer cannot carry',
    env: { API_TOKENS: 'write:s3cret value' },
    messages: [/API_TOKENS entry 1/],
    hidden: 's3cret',
  },
  {
    name: 'API_TOKENS repeating a token',
    env: { API_TOKENS: 'read:abc123def456ghi789jkl012mno345pq,write:abc123def456ghi789jkl012mno345pq' },
    messages: [/API_TOKENS entry 2/, /repeats/],
    hidden: 'abc123def456ghi789jkl012mno345pq',
  },
  {
    name: 'API_TOKENS with an empty entry',
    env: { API_TOKENS: 'read:abc123def456ghi789jkl012mno345pq,' },
    messages: [/API_TOKENS entry 2/],
  },
  {
    name: 'API_TOKENS with a token under 32 characters',
    env: { API_TOKENS: 'read:abc123def456ghi789jkl012mno345pq,write:q7' },
    messages: [/API_TOKENS entry 2/, /at least 32 characters/, /has 2/],
    hidden: 'q7',
  },
  {
    name: 'API_TOKENS with a token of few distinct characters',
    env: { API_TOKENS: 'write:aaaaaaaaaaaaaaaabbbbbbbbbbbbbbbb' },
    messages: [/API_TOKENS entry 1/, /could be guessed/],
    hidden: 'aaaaaaaa',
  },
  {
    name: 'API_TOKENS set but empty',
    env: { API_TOKENS: '' },
    messages: [/API_TOKENS/, /holds no tokens/, /leave API_TOKENS unset/],
  },
  { name: 'API_TOKENS_FILE set but empty', env: { API_TOKENS_FILE: '' }, messages: [/API_TOKENS_FILE/] },
  {
    name: 'ALLOWED_HOSTS with a port',
    env: { ALLOWED_HOSTS: 'example.com:8080' },
    messages: [/ALLOWED_HOSTS/, /no port/],
  },
  {
    name: 'API_TOKENS and API_TOKENS_FILE together',
    env: { API_TOKENS: 'read:abc123def456ghi789jkl012mno345pq', API_TOKENS_FILE: tokenFile },
    messages: [/not both/],
  },
  {
    name: 'API_TOKENS_FILE that does not exist',
    env: { API_TOKENS_FILE: '/nonexistent/tokens' },
    messages: [/API_TOKENS_FILE/, /cannot be read/],
  },
  { name: 'API_TOKENS_FILE with no tokens', env: { API_TOKENS_FILE: emptyTokenFile }, messages: [/holds no tokens/] },
  {
    name: 'CORS_ORIGINS with a path',
    env: { CORS_ORIGINS: 'https://app.example.com/x' },
    messages: [/CORS_ORIGINS/, /app\.example\.com\/x/],
  },
  { name: 'TRUST_PROXY=yes', env: { TRUST_PROXY: 'yes' }, messages: [/TRUST_PROXY/, /"yes"/] },
  { name: 'TRUST_PROXY with bad bits', env: { TRUST_PROXY: '10.0.0.0/33' }, messages: [/TRUST_PROXY/] },
  {
    name: 'several bad settings at once: all in one message',
    env: { PORT: 'abc', LOG_LEVEL: 'loud', SHUTDOWN_TIMEOUT_MS: 'soon', DATABASE_URL: 'mysql://db/users' },
    argv: ['--host', ''],
    messages: [/PORT/, /LOG_LEVEL/, /SHUTDOWN_TIMEOUT_MS/, /DATABASE_URL/, /HOST/],
  },
];

function configError(env: Env, argv: string[]): ConfigError {
  try {
    loadConfig(env, argv);
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected loadConfig to throw a ConfigError');
}

describe('loadConfig', () => {
  describe('valid settings', () => {
    for (const row of validRows) {
      it(row.name, () => {
        assert.deepEqual(loadConfig(row.env ?? {}, row.argv ?? []), { ...DEFAULTS, ...row.expected });
      });
    }
  });

  describe('invalid settings throw a ConfigError naming the setting', () => {
    for (const row of invalidRows) {
      it(row.name, () => {
        const error = configError(row.env ?? {}, row.argv ?? []);
        assert.equal(error.name, 'ConfigError');
        for (const pattern of row.messages) assert.match(error.message, pattern);
        if (row.hidden !== undefined) assert.ok(!error.message.includes(row.hidden), error.message);
      });
    }
  });

  it('a file:// URL with a host is refused, not read as another path', () => {
    // file://data/users.db has the host "data"; taking only the URL's pathname would open /users.db.
    for (const url of ['file://data/users.db', 'file://./data/users.db']) {
      let config: Readonly<Config> | undefined;
      try {
        config = loadConfig({ DATABASE_URL: url }, []);
      } catch (error) {
        assert.ok(error instanceof ConfigError && /DATABASE_URL/.test(error.message), String(error));
        continue;
      }
      assert.fail(`${url} was accepted as ${JSON.stringify(config.database)}`);
    }
  });

  describe('JWT settings', () => {
    it('a JWKS URL (https, or http to loopback) gives the JWT settings with their defaults', () => {
      for (const url of [
        'https://id.example.test/jwks',
        'http://127.0.0.1:8080/jwks',
        'http://localhost/jwks',
        'http://[::1]/jwks',
      ]) {
        const { jwt } = loadConfig({ ...JWT_BASE, JWT_JWKS_URL: url }, []);
        assert.ok(jwt?.keys.kind === 'jwks', url);
        assert.equal(jwt.keys.url.href, new URL(url).href);
        assert.deepEqual(
          { ...jwt, keys: { ...jwt.keys, url: undefined } },
          {
            keys: { kind: 'jwks', url: undefined, maxAgeMs: 600_000, cooldownMs: 10_000, timeoutMs: 5000 },
            issuer: 'https://id.example.test/',
            audience: 'user-records',
            scopeClaim: 'scope',
            readScope: 'users:read',
            writeScope: 'users:write',
            clockSkewMs: 30_000,
          },
        );
      }
    });

    it('a public key as PEM text or as a path, with the algorithms its type allows', () => {
      for (const value of [publicPem, publicKeyFile, `  ${publicPem}\n`]) {
        const { jwt } = loadConfig({ ...JWT_BASE, JWT_PUBLIC_KEY: value, JWT_SCOPE_CLAIM: 'scp' }, []);
        assert.ok(jwt?.keys.kind === 'key');
        assert.equal(jwt.keys.key.asymmetricKeyType, 'rsa');
        assert.deepEqual(jwt.keys.algorithms, ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512']);
        assert.equal(jwt.scopeClaim, 'scp');
      }
      const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' });
      const ed = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' });
      const algorithms = (pem: string | Buffer) => {
        const keys = loadConfig({ ...JWT_BASE, JWT_PUBLIC_KEY: pem.toString() }, []).jwt?.keys;
        return keys?.kind === 'key' ? keys.algorithms : undefined;
      };
      assert.deepEqual(algorithms(ec), ['ES256']);
      assert.deepEqual(algorithms(ed), ['EdDSA', 'Ed25519']);
    });
  });

  it('ignores environment variables it does not know', () => {
    assert.deepEqual(loadConfig({ HOME: '/root', NODE_ENV: 'production', port: '1' }, []), DEFAULTS);
  });

  it('returns a frozen object', () => {
    const config = loadConfig({}, ['--port', '8080']);
    assert.ok(Object.isFrozen(config));
    assert.throws(() => {
      (config as { port: number }).port = 1;
    }, TypeError);
    assert.equal(config.port, 8080);
  });
});
