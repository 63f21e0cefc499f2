import { createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Invalid } from './kinds.ts';

/**
 * The signature algorithms a token may use: asymmetric only, so `none` and HMAC (a token signed
 * with the public key's bytes as a shared secret) are refused before any key is looked at.
 */
export const JWT_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const;

/** Where the keys that sign tokens come from: the provider's JWKS, or one public key. */
export type JwtKeys =
  | { kind: 'jwks'; url: URL; maxAgeMs: number; cooldownMs: number; timeoutMs: number }
  | { kind: 'key'; key: KeyObject; algorithms: readonly string[] };

/** Tokens from an identity provider (JWT): how they are checked and what their scopes mean. */
export interface JwtConfig {
  keys: JwtKeys;
  issuer: string;
  audience: string;
  /** The claim holding the scopes: a space-separated string or an array of strings. */
  scopeClaim: string;
  /** The scope that means `read` (GET, HEAD, OPTIONS), and the one that means `write` (everything). */
  readScope: string;
  writeScope: string;
  clockSkewMs: number;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** JWT_JWKS_URL: https, or http to a loopback address only (a provider on the same machine, a test). */
export function parseJwksUrl(value: string): URL | Invalid {
  const url = URL.canParse(value) ? new URL(value) : undefined;
  if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    return new Invalid('must be an https:// URL');
  }
  if (url.protocol === 'http:' && !LOOPBACK.has(url.hostname)) {
    return new Invalid('must be https:// (plain http is allowed only to 127.0.0.1, [::1] or localhost)');
  }
  if (url.username !== '' || url.password !== '') return new Invalid('must not hold a user name or password');
  return url;
}

/** The algorithms a public key of this type can verify (RSA at 2048 bits or more). */
function algorithmsFor(key: KeyObject): readonly string[] | Invalid {
  const details = key.asymmetricKeyDetails ?? {};
  switch (key.asymmetricKeyType) {
    case 'rsa':
    case 'rsa-pss': {
      if ((details.modulusLength ?? 0) < 2048) return new Invalid('holds an RSA key under 2048 bits');
      return key.asymmetricKeyType === 'rsa'
        ? ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512']
        : ['PS256', 'PS384', 'PS512'];
    }
    case 'ec': {
      const curves: Record<string, string> = { prime256v1: 'ES256', secp384r1: 'ES384', secp521r1: 'ES512' };
      const algorithm = curves[details.namedCurve ?? ''];
      return algorithm === undefined
        ? new Invalid('holds an EC key on a curve JWT does not use (P-256, P-384, P-521)')
        : [algorithm];
    }
    case 'ed25519':
      return ['EdDSA', 'Ed25519'];
    default:
      return new Invalid(
        `holds a ${key.asymmetricKeyType ?? 'symmetric'} key; use an RSA, EC (P-256, P-384, P-521) or Ed25519 key`,
      );
  }
}

/**
 * JWT_PUBLIC_KEY: the PEM text of a public key (`-----BEGIN PUBLIC KEY-----`), or the path of a
 * file holding one. A private key is refused: it does not belong in the service's settings.
 */
export function parsePublicKey(value: string): { key: KeyObject; algorithms: readonly string[] } | Invalid {
  let pem = value.trim();
  if (!pem.startsWith('-----BEGIN')) {
    try {
      pem = readFileSync(pem, 'utf8').trim();
    } catch (error) {
      return new Invalid(`is neither PEM text nor a readable file: ${(error as Error).message}`);
    }
  }
  if (/PRIVATE KEY-----/.test(pem))
    return new Invalid('holds a private key; give the public key only (openssl pkey -pubout)');
  let key: KeyObject;
  try {
    key = createPublicKey({ key: pem, format: 'pem' });
  } catch {
    return new Invalid('is not a PEM public key (-----BEGIN PUBLIC KEY-----)');
  }
  const algorithms = algorithmsFor(key);
  return algorithms instanceof Invalid ? algorithms : { key, algorithms };
}

const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/;

/** JWT_READ_SCOPE, JWT_WRITE_SCOPE: one OAuth scope (RFC 6749: printable ASCII, no space, `"` or `\`). */
export function parseScope(value: string): string | Invalid {
  return SCOPE_TOKEN.test(value) ? value : new Invalid('must be one scope: printable ASCII without spaces, " or \\');
}

/** JWT_SCOPE_CLAIM: a claim's name, as it appears at the top of the token's payload. */
export function parseClaimName(value: string): string | Invalid {
  return /^[A-Za-z0-9_:.\-/]{1,64}$/.test(value)
    ? value
    : new Invalid('must be a claim name: letters, digits and _ : . - / (at most 64)');
}
