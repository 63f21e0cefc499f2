import Fastify, { type FastifyInstance, LogController } from 'fastify';
import type { Config } from './config.ts';
import { registerAuth } from './http/auth.ts';
import { registerBodyParsers } from './http/body-parsers.ts';
import { registerConditionalGet } from './http/conditional.ts';
import { clientErrorHandler, frameworkErrors, refuseExpectation, registerErrorHandlers } from './http/errors.ts';
import { HttpError } from './http/problem.ts';
import { registerLimits } from './http/limits.ts';
import { loggerOptions, registerAccessLog, requestId } from './http/logging.ts';
import { registerAllMethods } from './http/methods.ts';
import { paramErrors, parseParams } from './http/query-string.ts';
import { registerSecurityHeaders } from './http/security-headers.ts';
import { createValidatorCompiler, invalidInput } from './http/validation.ts';
import { registerDocs } from './ops/docs.ts';
import { registerHealthRoutes } from './ops/health.ts';
import { registerMetrics } from './ops/metrics.ts';
import type { UserStore } from './store/store.ts';
import { registerUserRoutes } from './users/routes.ts';
import { RULES } from './users/schemas.ts';

export const BODY_LIMIT = 64 * 1024;

export interface AppDeps {
  store: UserStore;
}

/** The settings the app itself uses (the rest are the server's: port, host, database, workers). */
export type AppConfig = Pick<
  Config,
  | 'logLevel'
  | 'logBufferMb'
  | 'requestTimeoutMs'
  | 'headersTimeoutMs'
  | 'keepAliveTimeoutMs'
  | 'listingCacheMb'
  | 'rateLimit'
  | 'overloadLagMs'
  | 'tokens'
  | 'corsOrigins'
  | 'trustedProxies'
>;

/** The whole service, ready for requests; tests and the server build it the same way. */
export async function buildApp(config: AppConfig, deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    logger: loggerOptions(config.logLevel, config.logBufferMb, new Set(Object.keys(RULES))),
    genReqId: requestId,
    // Behind a proxy, the rate limit and the logs need the client's address, not the proxy's.
    ...(config.trustedProxies.length > 0 ? { trustProxy: config.trustedProxies.join(',') } : {}),
    requestIdHeader: false,
    logController: new LogController({ requestIdLogLabel: 'requestId', disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT,
    routerOptions: { querystringParser: parseParams, maxParamLength: 65_536 },
    frameworkErrors,
    clientErrorHandler,
    return503OnClosing: false,
    // A request that has not fully arrived in time (slow headers or a body that stalls) is answered
    // 408 and closed, checked every second. Node needs it when the server is created (http options);
    // Fastify then assigns its own option over it, so both carry the same value.
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    http: {
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: config.headersTimeoutMs,
      keepAliveTimeout: config.keepAliveTimeoutMs,
      connectionsCheckingInterval: 1000,
      // HTTP/1.1 requires Host; refused below as a problem rather than by Node with an empty body.
      requireHostHeader: false,
    },
  });

  app.setValidatorCompiler(createValidatorCompiler(RULES));
  registerAllMethods(app);
  registerBodyParsers(app);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    if (request.headers.host === undefined && request.raw.httpVersion === '1.1') {
      throw new HttpError('malformed-request', 'HTTP/1.1 requests need a Host header.');
    }
    // Routes with a query schema report these with every other fault; the rest refuse here.
    const early = paramErrors(request.query);
    if (early.length > 0 && request.routeOptions.schema?.querystring === undefined) throw invalidInput(early);
  });

  registerAccessLog(app);
  registerErrorHandlers(app);
  app.server.on('checkExpectation', refuseExpectation);
  // A client may end its side once its request is sent (HTTP/1.0 style, `nc`): answer it anyway.
  // Node's default drops such a request unless its answer happens to be ready in the same tick.
  (app.server as { httpAllowHalfOpen?: boolean }).httpAllowHalfOpen = true;
  registerConditionalGet(app);
  // In hook order: headers every answer carries, then what may refuse a request before it costs
  // anything (URL length, overload, rate), then who is asking.
  const store = registerMetrics(app, deps.store);
  await registerSecurityHeaders(app, config.corsOrigins);
  await registerLimits(app, config);
  registerAuth(app, config.tokens);

  await registerDocs(app);
  registerHealthRoutes(app, store);
  registerUserRoutes(app, store, config.listingCacheMb * 1024 * 1024);
  return app;
}
