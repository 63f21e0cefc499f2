import { createHash, timingSafeEqual } from 'node:crypto';
import type { ApiToken, JwtConfig, Scope } from '../config/load.ts';
import { jwtVerifier, looksLikeJwt } from './jwt.ts';
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
  /** A token was sent and was wrong (a guess), rather than none at all, or one that could not be checked. */
  guessed: boolean;
  /** Why, for the log line (fixed words, never the token). */
  reason?: string;
}

/** What authentication decided: the scope the request goes on with, or why it may not. */
export type AuthResult = { scope: Scope } | AuthFailure;

/** Checks a request's token; a promise only when a JWT has to be verified. */
export type Authenticate = (method: string, authorization?: string) => AuthResult | Promise<AuthResult>;

const scopes = new WeakMap<object, Scope>();

/** The scope the gate let this request through with; undefined: authentication is off. */
export const grantedScope = (request: object): Scope | undefined => scopes.get(request);

/** Kept by the gate for the route (`GET /auth/scope`), so it need not check the token again. */
export const grantScope = (request: object, scope: Scope): void => {
  scopes.set(request, scope);
};

function invalid(reason?: string): AuthFailure {
  const described = reason === undefined ? '' : `, error_description="${reason}"`;
  const detail = reason === undefined ? 'The bearer token is not valid.' : `The bearer token is not valid: ${reason}.`;
  const error = new HttpError('unauthorized', detail, {
    headers: { 'www-authenticate': `${REALM}, error="invalid_token"${described}` },
  });
  return { error, guessed: true, ...(reason === undefined ? {} : { reason }) };
}

function insufficient(method: string, needed: string, had: string): AuthFailure {
  const error = new HttpError('forbidden', `${method} needs a token with the ${needed} scope; ${had}.`, {
    headers: { 'www-authenticate': `${REALM}, error="insufficient_scope", scope="${needed}"` },
  });
  return { error, guessed: false };
}

/**
 * Bearer-token authentication: the scope a request goes on with, or why it may not (401 without a
 * token or with a wrong one, 403 for a token whose scope does not allow the method, 503 when a JWT
 * cannot be checked because the provider's keys cannot be had). API tokens are compared first, each
 * in constant time and with no early exit; a token shaped as a JWT that is none of them is then
 * verified as one, when JWT is on.
 */
export function authenticator(tokens: readonly ApiToken[], jwt: JwtConfig | undefined): Authenticate {
  const known = tokens.map(({ scope, token }) => ({ scope, digest: digest(token) }));

  // A token found valid is remembered, so the next requests with it skip the hashing. Only valid
  // tokens are kept (at most as many as are configured); a wrong one is always compared in full.
  const valid = new Map<string, Scope>();
  const scopeOf = (presented: string): Scope | undefined => {
    const remembered = valid.get(presented);
    if (remembered !== undefined) return remembered;
    if (known.length === 0) return undefined;
    const candidate = digest(presented);
    let scope: Scope | undefined;
    for (const entry of known) {
      if (timingSafeEqual(candidate, entry.digest) && scope !== 'write') scope = entry.scope;
    }
    if (scope !== undefined) valid.set(presented, scope);
    return scope;
  };

  const allow = (method: string, scope: Scope): AuthResult =>
    scope === 'read' && !READ_METHODS.has(method) ? insufficient(method, 'write', 'this one may only read') : { scope };

  const verify = jwt === undefined ? undefined : jwtVerifier(jwt);
  const checkJwt = async (method: string, token: string): Promise<AuthResult> => {
    const outcome = await (verify as NonNullable<typeof verify>)(token);
    if (outcome.kind === 'invalid') return invalid(outcome.reason);
    if (outcome.kind === 'unavailable') {
      const error = new HttpError(
        'unavailable',
        'The identity provider’s keys could not be fetched to check this token; retry shortly.',
        { headers: { 'retry-after': String(outcome.retryAfter) } },
      );
      return { error, guessed: false, reason: outcome.cause };
    }
    const { readScope, writeScope } = jwt as JwtConfig;
    if (outcome.scopes.includes(writeScope)) return { scope: 'write' };
    if (!outcome.scopes.includes(readScope)) {
      const needed = READ_METHODS.has(method) ? readScope : writeScope;
      return insufficient(method, needed, `this one has neither ${readScope} nor ${writeScope}`);
    }
    return READ_METHODS.has(method) ? { scope: 'read' } : insufficient(method, writeScope, 'this one may only read');
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
    if (scope !== undefined) return allow(method, scope);
    if (verify === undefined) return invalid();
    return looksLikeJwt(presented)
      ? checkJwt(method, presented)
      : invalid('the token is neither an API token nor a JWT');
  };
}
