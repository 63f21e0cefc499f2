import { createHash, timingSafeEqual } from 'node:crypto';
import type { ApiToken, Scope } from '../config/load.ts';
import { HttpError } from './problem.ts';

/** Methods a read token may use (OPTIONS reveals only which methods a path serves); every other method needs write. */
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const REALM = 'Bearer realm="user-records"';
const BEARER = /^Bearer +(\S+) *$/i;

/** The token of an `Authorization: Bearer <token>` header, if it is one. */
export function bearerToken(authorization: string | undefined): string | undefined {
  return BEARER.exec(authorization ?? '')?.[1];
}

/** Hashing both sides gives equal lengths, so the comparison time says nothing about the token. */
function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

export interface AuthFailure {
  error: HttpError;
  /** A token was sent and was wrong (a guess), rather than none at all. */
  guessed: boolean;
}

/**
 * Bearer-token authentication: returns why a request may not go on (401 without a token or with a
 * wrong one, 403 for a read token on a write), or undefined. Every configured token is compared, in
 * constant time and with no early exit.
 */
export function authenticator(
  tokens: readonly ApiToken[],
): (method: string, authorization?: string) => AuthFailure | undefined {
  const known = tokens.map(({ scope, token }) => ({ scope, digest: digest(token) }));

  // A token found valid is remembered, so the next requests with it skip the hashing. Only valid
  // tokens are kept (at most as many as are configured); a wrong one is always compared in full.
  const valid = new Map<string, Scope>();
  const scopeOf = (presented: string): Scope | undefined => {
    const remembered = valid.get(presented);
    if (remembered !== undefined) return remembered;
    const candidate = digest(presented);
    let scope: Scope | undefined;
    for (const entry of known) {
      if (timingSafeEqual(candidate, entry.digest) && scope !== 'write') scope = entry.scope;
    }
    if (scope !== undefined) valid.set(presented, scope);
    return scope;
  };

  return (method, authorization) => {
    const presented = bearerToken(authorization);
    if (presented === undefined) {
      const error = new HttpError('unauthorized', 'This service needs a token: send "Authorization: Bearer <token>".', {
        headers: { 'www-authenticate': REALM },
      });
      return { error, guessed: authorization !== undefined };
    }
    const scope = scopeOf(presented);
    if (scope === undefined) {
      const error = new HttpError('unauthorized', 'The bearer token is not valid.', {
        headers: { 'www-authenticate': `${REALM}, error="invalid_token"` },
      });
      return { error, guessed: true };
    }
    if (scope === 'read' && !READ_METHODS.has(method)) {
      const error = new HttpError(
        'forbidden',
        `${method} needs a token with the write scope; this one may only read.`,
        {
          headers: { 'www-authenticate': `${REALM}, error="insufficient_scope", scope="write"` },
        },
      );
      return { error, guessed: false };
    }
    return undefined;
  };
}
