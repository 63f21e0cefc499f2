import cors, { type FastifyCorsOptions } from '@fastify/cors';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** What a browser script may send and read; Authorization is never covered by a wildcard, so listed. */
const SHARED: FastifyCorsOptions = {
  methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
  allowedHeaders: [
    'Authorization',
    'Content-Type',
    'If-Match',
    'If-None-Match',
    'Idempotency-Key',
    'Last-Event-ID',
    'Prefer',
    'X-Request-Id',
  ],
  exposedHeaders: [
    'ETag',
    'Location',
    'Link',
    'Retry-After',
    'RateLimit-Limit',
    'RateLimit-Remaining',
    'RateLimit-Reset',
    'X-Request-Id',
    'Idempotent-Replayed',
    'X-Total-Count',
    'Preference-Applied',
  ],
  // Tokens travel in a header, never in cookies: no credentials mode.
  credentials: false,
  maxAge: 600,
};

/** CORS off for this request: no CORS header at all, and the request goes on as any other. */
const OFF: FastifyCorsOptions = { origin: false };

/**
 * CORS for the configured origins (`*`: any); none configured, nothing is registered. Decided per
 * request: only a listed Origin gets CORS headers. Only a real preflight (OPTIONS with Origin and
 * Access-Control-Request-Method) is answered here, in onRequest, before authentication (browsers send
 * no token with it); a plain OPTIONS still reaches its route and answers 204 with Allow.
 */
export async function registerCors(app: FastifyInstance, origins: readonly string[]): Promise<void> {
  if (origins.length === 0) return;
  const anyOrigin = origins.includes('*');
  const listed = new Set(origins);
  const decide = (request: FastifyRequest): FastifyCorsOptions => {
    const origin = request.headers.origin;
    // An empty Origin names no origin (no browser sends one): answered as a request without it.
    if (origin === undefined || origin === '' || (!anyOrigin && !listed.has(origin))) return OFF;
    const preflight = request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined;
    return { ...SHARED, origin: anyOrigin ? '*' : origin, preflight };
  };
  await app.register(cors, {
    hook: 'onRequest',
    delegator: (request, callback) => callback(null, decide(request)),
  });
}
