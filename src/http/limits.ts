import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { registerOverloadShedding } from './overload.ts';
import { HttpError } from './problem.ts';

export type LimitsConfig = Pick<Config, 'rateLimit' | 'overloadLagMs'>;

/** The longest request target (path and query) the service reads. */
export const URL_LIMIT = 8 * 1024;

/** Probes and scrapers: cheap, and often sent from one address for many clients (a load balancer). */
export const NOT_RATE_LIMITED: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);
/** Still answered when overloaded: liveness must not fail for being busy. Readiness is shed, which
 * lets a load balancer send traffic elsewhere. */
export const NOT_SHED: ReadonlySet<string> = new Set(['/healthz', '/metrics']);

/**
 * Refuses, in this order and before any body is read: a URL over 8 KiB (414), any request while
 * the event loop lags (503), a client over its budget (429). Call before the routes are added.
 */
export async function registerLimits(app: FastifyInstance, config: LimitsConfig): Promise<void> {
  app.addHook('onRequest', async (request) => {
    if (request.raw.url !== undefined && request.raw.url.length > URL_LIMIT) {
      throw new HttpError('uri-too-long', `The URL is longer than the service reads (${URL_LIMIT} bytes).`);
    }
  });
  registerOverloadShedding(app, config.overloadLagMs, NOT_SHED);
  if (config.rateLimit !== null) await registerRateLimit(app, config.rateLimit);
}

/**
 * A fixed one-minute window per client address (IPv6 by /64), kept in this process's memory. Every
 * answer carries `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`; a 429 adds
 * `Retry-After`.
 */
async function registerRateLimit(app: FastifyInstance, perMinute: number): Promise<void> {
  await app.register(rateLimit, {
    global: false,
    max: perMinute,
    timeWindow: 60_000,
    enableDraftSpec: true,
    allowList: (request: FastifyRequest) => NOT_RATE_LIMITED.has(request.routeOptions.url ?? ''),
    errorResponseBuilder: (_request, context) =>
      new HttpError(
        'rate-limited',
        `This client sent more than ${context.max} requests in a minute; retry in ${Math.ceil(context.ttl / 1000)} s.`,
      ),
  });
  // One hook for every request, unknown paths included, ahead of authentication: a client guessing
  // tokens is limited too.
  app.addHook('onRequest', app.rateLimit());
}
