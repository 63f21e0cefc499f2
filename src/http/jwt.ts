import { createRemoteJWKSet, customFetch, errors, type JWTVerifyGetKey, jwtVerify } from 'jose';
import { JWT_ALGORITHMS, type JwtConfig } from '../config/jwt.ts';
import { boundedJwksFetch, KeysUnavailable } from './jwks-fetch.ts';

/**
 * What a token from the identity provider comes to: the scopes it grants (it verified), why it is
 * not valid (a 401, the reason in words RFC 6750 allows in `error_description`), or that the
 * provider's keys could not be had (a 503 after `retryAfter` seconds: no token is taken unverified).
 */
export type JwtOutcome =
  | { kind: 'valid'; scopes: readonly string[] }
  | { kind: 'invalid'; reason: string }
  | { kind: 'unavailable'; retryAfter: number; cause: string };

/** A compact JWS: three base64url parts, the signature's possibly empty (`alg: none`). */
const COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*$/;

/** Whether a bearer token is shaped as a JWT, so is checked as one rather than as an API token. */
export const looksLikeJwt = (token: string): boolean => COMPACT.test(token);

const CLAIM_REASONS: Record<string, string> = {
  nbf: 'the token is not valid yet (nbf)',
  iss: 'the token is from another issuer (iss)',
  aud: 'the token is for another audience (aud)',
  exp: 'the token has no valid expiry (exp)',
  iat: 'the token was issued in the future (iat)',
};

/** Why jose refused a token, in fixed words (never its message, which may quote the token's values). */
function reasonOf(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'the token has expired (exp)';
  if (error instanceof errors.JWTClaimValidationFailed) {
    return CLAIM_REASONS[error.claim] ?? `the token's ${error.claim.replace(/[^a-z]/gi, '')} claim is not acceptable`;
  }
  if (error instanceof errors.JOSEAlgNotAllowed) return 'the token is signed with an algorithm not allowed (alg)';
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'the signature does not verify';
  if (error instanceof errors.JWKSNoMatchingKey) return 'no key of the provider matches the token (kid)';
  // jose's checks of a key it was given (an RSA key under 2048 bits the provider published, say).
  if (error instanceof TypeError) return "the provider's key for it cannot be used";
  return 'the token is malformed';
}

/** The scopes a payload grants through its scope claim: a space-separated string or a list of strings. */
function scopesOf(claim: unknown): readonly string[] {
  if (typeof claim === 'string') return claim.split(' ').filter((scope) => scope !== '');
  if (Array.isArray(claim)) return claim.filter((scope): scope is string => typeof scope === 'string');
  return [];
}

/**
 * Verifies tokens from the identity provider with jose: signature with an allowed asymmetric
 * algorithm and the provider's key, `iss`, `aud`, `exp` (required) and `nbf` within the clock skew.
 * The provider's key set is fetched on first use, kept JWT_JWKS_MAX_AGE, fetched again for an
 * unknown `kid` at most once per JWT_JWKS_COOLDOWN, each fetch within JWT_JWKS_TIMEOUT_MS.
 */
export function jwtVerifier(config: JwtConfig): (token: string) => Promise<JwtOutcome> {
  const { keys } = config;
  let key: JWTVerifyGetKey | Parameters<typeof jwtVerify>[1];
  let retryAfter = () => 1;
  let algorithms: readonly string[];
  if (keys.kind === 'jwks') {
    const bounded = boundedJwksFetch(keys.cooldownMs);
    retryAfter = bounded.retryAfter;
    const remote = createRemoteJWKSet(keys.url, {
      cacheMaxAge: keys.maxAgeMs,
      cooldownDuration: keys.cooldownMs,
      timeoutDuration: keys.timeoutMs,
      [customFetch]: bounded.fetch,
    });
    algorithms = JWT_ALGORITHMS;
    // Whatever goes wrong in getting the keys is the provider's fault, not the token's: told apart
    // from a token that names no key, so the client hears 503 (try again) rather than 401.
    key = async (header, token) => {
      try {
        return await remote(header, token);
      } catch (error) {
        if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) throw error;
        if (error instanceof errors.JOSENotSupported) throw error;
        throw new KeysUnavailable((error as Error).message, { cause: error });
      }
    };
  } else {
    key = keys.key;
    algorithms = keys.algorithms;
  }
  const options = {
    algorithms: [...algorithms],
    issuer: config.issuer,
    audience: config.audience,
    clockTolerance: config.clockSkewMs / 1000,
    requiredClaims: ['exp'],
  };
  // Several keys may fit a token while the provider rotates them: tokens without a kid (providers
  // with one key often leave it out) or a kid on two keys. The token is valid if one of them
  // verifies it; jose yields those keys, and leaves trying them to the caller.
  const verifyWithAny = async (token: string) => {
    try {
      return await jwtVerify(token, key as JWTVerifyGetKey, options);
    } catch (error) {
      if (!(error instanceof errors.JWKSMultipleMatchingKeys)) throw error;
      for await (const candidate of error) {
        try {
          return await jwtVerify(token, candidate, options);
        } catch (other) {
          if (!(other instanceof errors.JWSSignatureVerificationFailed)) throw other;
        }
      }
      throw new errors.JWSSignatureVerificationFailed();
    }
  };
  return async (token) => {
    try {
      const { payload } = await verifyWithAny(token);
      return { kind: 'valid', scopes: scopesOf(payload[config.scopeClaim]) };
    } catch (error) {
      if (error instanceof KeysUnavailable) {
        return { kind: 'unavailable', retryAfter: retryAfter(), cause: error.message };
      }
      return { kind: 'invalid', reason: reasonOf(error) };
    }
  };
}
