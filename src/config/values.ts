import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { Invalid } from './kinds.ts';

export type Scope = 'read' | 'write';

export interface ApiToken {
  scope: Scope;
  token: string;
}

const TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
/** A guessed token must take longer than any rate limit allows: 32 characters at least. */
export const MIN_TOKEN_LENGTH = 32;
/** Fewer distinct characters than this in a token means a pattern, not a random value. */
const MIN_DISTINCT = 10;

/**
 * `scope:token` entries (API_TOKENS, or the lines of API_TOKENS_FILE). Messages name an entry by
 * its position, never by its token.
 */
export function parseTokens(entries: string[]): readonly ApiToken[] | Invalid {
  const tokens: ApiToken[] = [];
  const seen = new Set<string>();
  for (const [index, raw] of entries.entries()) {
    const entry = raw.trim();
    const colon = entry.indexOf(':');
    const scope = entry.slice(0, colon);
    const token = entry.slice(colon + 1);
    const where = `entry ${index + 1}`;
    if (colon === -1 || (scope !== 'read' && scope !== 'write')) {
      return new Invalid(`${where} must be scope:token with scope read or write`);
    }
    if (!TOKEN.test(token))
      return new Invalid(`${where}: a token is letters, digits and - . _ ~ + / (optionally ending in =)`);
    if (token.length < MIN_TOKEN_LENGTH) {
      return new Invalid(
        `${where}: a token must be at least ${MIN_TOKEN_LENGTH} characters (this one has ${token.length}); make one with: openssl rand -hex 24`,
      );
    }
    if (new Set(token).size < MIN_DISTINCT) {
      return new Invalid(
        `${where}: the token repeats a few characters and could be guessed; use a random one (openssl rand -hex 24)`,
      );
    }
    if (seen.has(token)) return new Invalid(`${where} repeats a token given before`);
    seen.add(token);
    tokens.push(Object.freeze({ scope, token }));
  }
  return tokens;
}

/** API_TOKENS_FILE: one `scope:token` a line; blank lines and `#` comments allowed. */
export function readTokenFile(path: string): readonly ApiToken[] | Invalid {
  let content: string;
  try {
    content = readFileSync(path, 'utf8');
  } catch (error) {
    return new Invalid(`cannot be read: ${(error as Error).message}`);
  }
  const lines = content
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  if (lines.length === 0) return new Invalid(`${JSON.stringify(path)} holds no tokens`);
  return parseTokens(lines);
}

const list = (value: string) =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');

/** TRUST_PROXY: comma-separated addresses or CIDR ranges (`10.0.0.0/8`). */
export function parseProxies(value: string): readonly string[] | Invalid {
  const proxies = list(value);
  for (const proxy of proxies) {
    const [address = '', bits, ...rest] = proxy.split('/');
    const version = isIP(address);
    const maxBits = version === 6 ? 128 : 32;
    const bitsOk = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= maxBits);
    if (version === 0 || !bitsOk || rest.length > 0) {
      return new Invalid(
        `must be comma-separated IP addresses or CIDR ranges such as 10.0.0.0/8, got ${JSON.stringify(proxy)}`,
      );
    }
  }
  return proxies;
}

/** CORS_ORIGINS: comma-separated origins (`https://app.example.com`), or `*` for any. */
export function parseOrigins(value: string): readonly string[] | Invalid {
  const origins = list(value);
  if (origins.length === 1 && origins[0] === '*') return ['*'];
  for (const origin of origins) {
    const parsed = URL.canParse(origin) ? new URL(origin) : undefined;
    if (parsed === undefined || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin) {
      return new Invalid(
        `must be * or comma-separated origins such as https://app.example.com, got ${JSON.stringify(origin)}`,
      );
    }
  }
  return origins;
}

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$/;

/** ALLOWED_HOSTS: comma-separated host names or addresses (no port), or `*`. IPv6 with or without brackets. */
export function parseHosts(value: string): readonly string[] | Invalid {
  const hosts = list(value).map((host) => host.toLowerCase());
  if (hosts.length === 1 && hosts[0] === '*') return ['*'];
  for (const host of hosts) {
    const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
    if (isIP(bare) === 0 && !HOST_NAME.test(bare)) {
      return new Invalid(`must be * or comma-separated host names or addresses (no port), got ${JSON.stringify(host)}`);
    }
  }
  return hosts.map((host) => (isIP(host) === 6 ? `[${host}]` : host));
}

/**
 * WEBHOOK_URLS: comma-separated http or https URLs, each at most 2048 characters, without a user
 * or password in them (they would be logged with every failed delivery; put a secret path or the
 * receiver's own check of the signature instead). Answers them as URL parsing writes them.
 */
export function parseWebhookUrls(value: string): readonly string[] | Invalid {
  const urls: string[] = [];
  for (const [i, url] of list(value).entries()) {
    const parsed = URL.canParse(url) ? new URL(url) : undefined;
    if (parsed === undefined || !/^https?:$/.test(parsed.protocol) || url.length > 2048) {
      // By its place, never quoted: a receiver's URL may carry a secret path (a typo in it too).
      return new Invalid(
        `must be comma-separated http:// or https:// URLs of at most 2048 characters; URL ${i + 1} is not (not shown: a URL may hold a secret path)`,
      );
    }
    if (parsed.username !== '' || parsed.password !== '') {
      return new Invalid(
        'must not hold a user name or password (they would be logged); the signature authenticates deliveries',
      );
    }
    urls.push(parsed.href);
  }
  if (new Set(urls).size !== urls.length) return new Invalid('must not name a URL twice');
  return urls;
}

const WEBHOOK_SECRET = /^whsec_([A-Za-z0-9+/]+={0,2})$/;

/** WEBHOOK_SECRET: `whsec_` and the base64 of 24 to 64 random bytes, as Standard Webhooks gives it; the key's bytes. */
export function parseWebhookSecret(value: string): Buffer | Invalid {
  const match = WEBHOOK_SECRET.exec(value.trim());
  const key = match === null ? undefined : Buffer.from(match[1] as string, 'base64');
  if (key === undefined || key.length < 24 || key.length > 64) {
    return new Invalid('must be whsec_ followed by the base64 of 24 to 64 random bytes (openssl rand -base64 32)');
  }
  return key;
}
