import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ApiToken, Scope } from '../config.ts';
import { HttpError } from './problem.ts';

/** Routes anyone may call, besides the docs page: they describe the service and hold no data. */
export const PUBLIC_ROUTES: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/openapi.json']);
const DOCS_PREFIX = '/docs';
/** Methods a read token may use; every other method needs write. */
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const REALM = 'Bearer realm="user-records"';
const BEARER = /^Bearer +(\S+) *$/i;

function isPublic(route: string | undefined): boolean {
  return (
    route !== undefined && (PUBLIC_ROUTES.has(route) || route === DOCS_PREFIX || route.startsWith(`${DOCS_PREFIX}/`))
  );
}

/** Hashing both sides gives equal lengths, so the comparison time says nothing about the token. */
function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/**
 * Bearer-token authentication, off when no tokens are configured. Runs in onRequest, after the
 * limits and before any body is read; unknown paths answer 401 like known ones, so nothing about
 * what exists is revealed. CORS preflights never get here: CORS answers them first.
 */
export function registerAuth(app: FastifyInstance, tokens: readonly ApiToken[]): void {
  if (tokens.length === 0) return;
  const known = tokens.map(({ scope, token }) => ({ scope, digest: digest(token) }));

  /** The scope of a presented token, or undefined; every configured token is compared, no early exit. */
  const scopeOf = (presented: string): Scope | undefined => {
    const candidate = digest(presented);
    let scope: Scope | undefined;
    for (const entry of known) {
      if (timingSafeEqual(candidate, entry.digest) && scope !== 'write') scope = entry.scope;
    }
    return scope;
  };

  app.addHook('onRequest', async (request) => {
    if (isPublic(request.routeOptions.url)) return;
    const presented = BEARER.exec(request.headers.authorization ?? '')?.[1];
    if (presented === undefined) {
      throw new HttpError('unauthorized', 'This service needs a token: send "Authorization: Bearer <token>".', {
        headers: { 'www-authenticate': REALM },
      });
    }
    const scope = scopeOf(presented);
    if (scope === undefined) {
      throw new HttpError('unauthorized', 'The bearer token is not valid.', {
        headers: { 'www-authenticate': `${REALM}, error="invalid_token"` },
      });
    }
    if (scope === 'read' && !READ_METHODS.has(request.method)) {
      throw new HttpError(
        'forbidden',
        `${request.method} needs a token with the write scope; this one may only read.`,
        {
          headers: { 'www-authenticate': `${REALM}, error="insufficient_scope", scope="write"` },
        },
      );
    }
  });
}
