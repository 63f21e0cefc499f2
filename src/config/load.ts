import { parseArgs } from 'node:util';
import type { DatabaseConfig } from './database-url.ts';
import { settingFlags } from './flags.ts';
import type { JwtConfig } from './jwt.ts';
import { Invalid } from './kinds.ts';
import { flagOf, type LogLevel, SETTINGS, type Setting, type SettingKey } from './settings.ts';
import type { ApiToken } from './values.ts';

export type { DatabaseConfig } from './database-url.ts';
export { hideCredentials, parseDatabaseUrl } from './database-url.ts';
export type { LogLevel } from './settings.ts';
export type { ApiToken, Scope } from './values.ts';
export type { JwtConfig } from './jwt.ts';

type ValueOf<S> = S extends Setting<infer T> ? T : never;
type SettingValues = { [K in SettingKey]: ValueOf<(typeof SETTINGS)[K]> };
type JwtKey = Extract<SettingKey, `jwt${string}`>;

/** The service's settings, parsed and checked: every setting of SETTINGS, tokens merged from either source. */
export type Config = Readonly<
  Omit<SettingValues, 'apiTokens' | 'apiTokensFile' | JwtKey> & {
    database: DatabaseConfig;
    logLevel: LogLevel;
    /** Bearer tokens; none (and no `jwt`): authentication is off. Never log these. */
    tokens: readonly ApiToken[];
    /** Tokens from an identity provider, when JWT_JWKS_URL or JWT_PUBLIC_KEY is set. */
    jwt: JwtConfig | undefined;
  }
>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const ENTRIES = Object.entries(SETTINGS) as Array<[SettingKey, Setting<unknown>]>;

/**
 * Reads every setting from the environment, overridden by flags (`--port 8080`), each checked by
 * its rule in SETTINGS; throws one ConfigError naming every bad setting.
 */
export function loadConfig(env: Record<string, string | undefined>, argv: string[]): Config {
  const problems = new Map<string, string>();
  let flags: Record<string, string | undefined> = {};
  try {
    flags = parseArgs({ args: argv, options: settingFlags(), strict: true, allowPositionals: false })
      .values as typeof flags;
  } catch (error) {
    const known = ENTRIES.map(([, definition]) => `--${flagOf(definition)}`);
    problems.set('flags', `${(error as Error).message}. Known flags: ${known.join(', ')}`);
  }

  const values: Record<string, unknown> = {};
  const given = new Set<SettingKey>();
  for (const [key, definition] of ENTRIES) {
    const fromFlag = flags[flagOf(definition)];
    const fromEnv = env[definition.env];
    let text = fromFlag ?? fromEnv;
    if (text === '' && fromFlag === undefined && definition.emptyIsError !== true) text = undefined;
    if (text !== undefined) given.add(key);
    text ??= definition.default;
    if (text === undefined) {
      values[key] = definition.unset;
      continue;
    }
    const value = definition.kind.parse(text);
    if (value instanceof Invalid) {
      const shown =
        definition.secret === true || value.message.includes(', got ') ? '' : `, got ${JSON.stringify(text)}`;
      problems.set(definition.env, `${definition.env} ${value.message}${shown}`);
    } else values[key] = value;
  }

  // Rules across settings.
  if (given.has('apiTokens') && given.has('apiTokensFile')) {
    problems.set('API_TOKENS', 'set API_TOKENS or API_TOKENS_FILE, not both');
  }
  const database = values.database as DatabaseConfig | undefined;
  if (Number(values.workers) > 1 && database?.kind === 'sqlite' && database.path === ':memory:') {
    problems.set('WORKERS', 'WORKERS above 1 needs a shared database; :memory: is private to each process');
  }
  if (((values.webhookUrls as readonly string[] | undefined) ?? []).length > 0 && values.webhookSecret === undefined) {
    problems.set('WEBHOOK_URLS', 'WEBHOOK_URLS needs WEBHOOK_SECRET, the key deliveries are signed with');
  }
  // Unset, the headers timeout follows a shorter request timeout down; set, it must fit inside it.
  if (Number(values.headersTimeoutMs) > Number(values.requestTimeoutMs)) {
    if (given.has('headersTimeoutMs')) {
      problems.set('HEADERS_TIMEOUT_MS', 'HEADERS_TIMEOUT_MS must not be longer than REQUEST_TIMEOUT_MS');
    } else values.headersTimeoutMs = values.requestTimeoutMs;
  }
  const jwt = jwtConfig(values as SettingValues, given, problems);
  if (problems.size > 0) throw new ConfigError(`invalid settings:\n  - ${[...problems.values()].join('\n  - ')}`);

  const rest = Object.fromEntries(
    Object.entries(values).filter(([key]) => key !== 'apiTokens' && key !== 'apiTokensFile' && !key.startsWith('jwt')),
  );
  const { apiTokens, apiTokensFile } = values as SettingValues;
  return Object.freeze({ ...rest, tokens: apiTokens ?? apiTokensFile ?? [], jwt }) as Config;
}

/**
 * The JWT settings as one object, or undefined when neither source of keys is set; the rules
 * across them go to `problems`: one source of keys, an issuer and an audience, and no JWT setting
 * given without a source (it would do nothing, silently).
 */
function jwtConfig(values: SettingValues, given: ReadonlySet<SettingKey>, problems: Map<string, string>) {
  const { jwtJwksUrl: url, jwtPublicKey: publicKey } = values;
  const source = given.has('jwtJwksUrl') || given.has('jwtPublicKey');
  if (given.has('jwtJwksUrl') && given.has('jwtPublicKey')) {
    problems.set('JWT_JWKS_URL', 'set JWT_JWKS_URL or JWT_PUBLIC_KEY, not both');
  }
  if (!source) {
    const stray = [...given].filter((key) => key.startsWith('jwt')).map((key) => SETTINGS[key].env);
    if (stray.length > 0) {
      problems.set(
        'JWT',
        `${stray.join(', ')} ${stray.length === 1 ? 'is' : 'are'} set, but neither JWT_JWKS_URL nor JWT_PUBLIC_KEY: set one of them to accept JWTs`,
      );
    }
    return undefined;
  }
  for (const key of ['jwtIssuer', 'jwtAudience'] as const) {
    if (values[key] === undefined && !problems.has(SETTINGS[key].env)) {
      problems.set(SETTINGS[key].env, `${SETTINGS[key].env} is required with JWT_JWKS_URL or JWT_PUBLIC_KEY`);
    }
  }
  if (values.jwtReadScope === values.jwtWriteScope) {
    problems.set('JWT_WRITE_SCOPE', 'JWT_READ_SCOPE and JWT_WRITE_SCOPE must differ');
  }
  const { jwtIssuer: issuer, jwtAudience: audience } = values;
  if (issuer === undefined || audience === undefined || (url === undefined && publicKey === undefined))
    return undefined;
  const keys: JwtConfig['keys'] =
    url !== undefined
      ? {
          kind: 'jwks',
          url,
          maxAgeMs: values.jwtJwksMaxAgeMs,
          cooldownMs: values.jwtJwksCooldownMs,
          timeoutMs: values.jwtJwksTimeoutMs,
        }
      : { kind: 'key', ...(publicKey as NonNullable<typeof publicKey>) };
  return Object.freeze({
    keys: Object.freeze(keys),
    issuer,
    audience,
    scopeClaim: values.jwtScopeClaim,
    readScope: values.jwtReadScope,
    writeScope: values.jwtWriteScope,
    clockSkewMs: values.jwtClockSkewMs,
  });
}
