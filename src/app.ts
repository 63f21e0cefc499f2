import Fastify, { type FastifyInstance } from 'fastify';
import { ChangeFeed } from './changes/feed.ts';
import { EVENT_RULES } from './changes/schemas.ts';
import { registerEventStream } from './changes/stream.ts';
import { webhookTargets } from './changes/webhook-filter.ts';
import { WebhookDeliveries } from './changes/webhooks.ts';
import type { Config } from './config/load.ts';
import { authenticator } from './http/auth.ts';
import { registerBodyParsers } from './http/body-parsers.ts';
import { registerCompression } from './http/compression.ts';
import { registerConditionalGet } from './http/conditional.ts';
import { registerCors } from './http/cors.ts';
import { crossSiteWriteCheck } from './http/cross-origin.ts';
import { ServiceLogController, wasCutShort } from './http/cut-short.ts';
import { earlyRefusals, registerErrorHandlers } from './http/errors.ts';
import { registerGate } from './http/gate.ts';
import { allowedHosts } from './http/hosts.ts';
import { BODY_LIMIT } from './http/limits.ts';
import { accessLog, lazyRequestLogger, loggerOptions, requestId } from './http/logging.ts';
import { registerAllMethods } from './http/methods.ts';
import { OverloadMonitor } from './http/overload.ts';
import { parseParams } from './http/query-string.ts';
import { RateLimiter } from './http/rate-limit.ts';
import { createValidatorCompiler } from './http/validation.ts';
import { logOutput } from './logs/output.ts';
import { registerAdmin } from './ops/admin.ts';
import { registerDocs } from './ops/docs.ts';
import { closeConnectionsWhileDraining } from './ops/hand-over.ts';
import { type Lifecycle, registerHealthRoutes } from './ops/health.ts';
import { registerHome } from './ops/home.ts';
import { registerMetrics } from './ops/metrics.ts';
import { registerTokenScope } from './ops/token-scope.ts';
import type { Tracing } from './ops/tracing.ts';
import type { UserStore } from './store/store.ts';
import { registerUserRoutes } from './users/routes.ts';
import { RULES } from './users/schemas.ts';

export interface AppDeps {
  store: UserStore;
  /** Set by the server once it is stopping (`/readyz` then answers 503); none: never. */
  lifecycle?: Lifecycle;
  /** Traces, when the OTEL_* variables turn them on (ops/tracing.ts); none: no hook, nothing loaded. */
  tracing?: Tracing;
  /**
   * Layers to leave out, for the bench's price list only (bench/layered-server.ts), which adds
   * them back one at a time to show what each costs. The service always runs with every layer;
   * the others (access log, limits, authentication) are switched by their settings.
   */
  without?: { securityHeaders?: true; metrics?: true };
}

/** The settings the app itself uses (the rest are the server's: port, database, workers). */
export type AppConfig = Pick<
  Config,
  | 'host'
  | 'logLevel'
  | 'logBufferMb'
  | 'requestTimeoutMs'
  | 'headersTimeoutMs'
  | 'keepAliveTimeoutMs'
  | 'listingCacheMb'
  | 'rateLimit'
  | 'overloadLagMs'
  | 'tokens'
  | 'jwt'
  | 'corsOrigins'
  | 'trustedProxies'
  | 'allowedHosts'
  | 'maxSubscribers'
  | 'maxSubscribersPerClient'
  | 'eventsBufferMb'
  | 'eventsHeartbeatMs'
  | 'webhookUrls'
  | 'webhookSecret'
  | 'webhookTimeoutMs'
>;

/** The whole service, ready for requests; tests and the server build it the same way. */
export async function buildApp(config: AppConfig, deps: AppDeps): Promise<FastifyInstance> {
  const limiter = config.rateLimit === null ? undefined : new RateLimiter(config.rateLimit);
  const early = earlyRefusals(limiter);
  const output = logOutput(config.logLevel, config.logBufferMb);
  // What each parameter must be, for error details; their names are logged, their values never.
  const rules = { ...RULES, ...EVENT_RULES };
  const knownNames = new Set(Object.keys(rules));
  const logAnswer = accessLog(output, config.logLevel, knownNames);
  const app = Fastify({
    logger: loggerOptions(config.logLevel, output, knownNames),
    genReqId: requestId,
    childLoggerFactory: lazyRequestLogger,
    // Behind a proxy, the rate limit and the logs need the client's address, not the proxy's.
    ...(config.trustedProxies.length > 0 ? { trustProxy: config.trustedProxies.join(',') } : {}),
    requestIdHeader: false,
    logController: new ServiceLogController({ requestIdLogLabel: 'requestId', disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT,
    routerOptions: { querystringParser: parseParams, maxParamLength: 65_536 },
    frameworkErrors: early.frameworkErrors,
    clientErrorHandler: early.clientErrorHandler,
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
      // HTTP/1.1 requires Host; refused by the gate as a problem rather than by Node with an empty body.
      requireHostHeader: false,
    },
  });

  // First, so that a request's span covers every hook after it, refusals included.
  deps.tracing?.register(app);
  app.setValidatorCompiler(createValidatorCompiler(rules));
  registerAllMethods(app);
  registerBodyParsers(app);
  registerErrorHandlers(app);
  // Before every route: answers are compressed by Accept-Encoding, then If-None-Match is compared
  // with the ETag of the answer as encoded.
  await registerCompression(app);
  registerConditionalGet(app);
  // A client may end its side once its request is sent (HTTP/1.0 style, `nc`): answer it anyway.
  // Node's default drops such a request unless its answer happens to be ready in the same tick.
  (app.server as { httpAllowHalfOpen?: boolean }).httpAllowHalfOpen = true;
  app.server.on('checkExpectation', early.refuseExpectation);
  // "Expect: 100-continue" is answered 100 by the gate once it lets the request through, so a
  // client sends no body to a request that is refused anyway (a 401, say).
  app.server.on('checkContinue', (request, response) => app.server.emit('request', request, response));

  const authenticate =
    config.tokens.length > 0 || config.jwt !== undefined ? authenticator(config.tokens, config.jwt) : undefined;
  const metrics = registerMetrics(app, deps.store);
  const withMetrics = deps.without?.metrics !== true;
  await registerGate(app, {
    securityHeaders: deps.without?.securityHeaders !== true,
    limiter,
    guesses: config.rateLimit === null ? undefined : new RateLimiter(config.rateLimit),
    overload: new OverloadMonitor(config.overloadLagMs),
    hosts: allowedHosts(config.allowedHosts, config.host),
    crossSiteWrite: crossSiteWriteCheck(config.corsOrigins),
    authenticate,
    cors: config.corsOrigins.length > 0 ? (scope) => registerCors(scope, config.corsOrigins) : undefined,
  });
  // One hook for what follows every answer: the access-log line and the request metrics.
  app.addHook('onResponse', (request, reply, done) => {
    logAnswer(request, reply);
    if (withMetrics) metrics.answered(request, reply);
    done();
  });
  app.addHook('onRequestAbort', (request, done) => {
    // An answer the service cut short was logged as such; the client did not abort it.
    if (!wasCutShort(request)) request.log.info({ req: request }, 'request aborted by the client');
    metrics.abandoned();
    done();
  });

  await registerDocs(app, { tokens: authenticate !== undefined, jwt: config.jwt !== undefined });
  registerAdmin(app);
  registerHome(app);
  registerTokenScope(app);
  const store = withMetrics ? metrics.store : deps.store;
  const lifecycle = deps.lifecycle ?? { draining: false };
  registerHealthRoutes(app, store, lifecycle);
  closeConnectionsWhileDraining(app, lifecycle);
  const streams = registerEventStream(app, store, new ChangeFeed(store), {
    maxSubscribers: config.maxSubscribers,
    maxSubscribersPerClient: config.maxSubscribersPerClient,
    bufferBytes: config.eventsBufferMb * 1024 * 1024,
    heartbeatMs: config.eventsHeartbeatMs,
    byToken: authenticate !== undefined,
    sent: metrics.changes.sent,
    ended: metrics.changes.streamEnded,
  });
  metrics.changes.countSubscribers(streams.open);
  lifecycle.endStreams = () => streams.endAll('this process is stopping: reconnect with Last-Event-ID');
  registerUserRoutes(app, store, config.listingCacheMb * 1024 * 1024);
  if (config.webhookUrls.length > 0 && config.webhookSecret !== undefined) {
    const webhooks = new WebhookDeliveries(
      store,
      { targets: webhookTargets(config.webhookUrls), secret: config.webhookSecret, timeoutMs: config.webhookTimeoutMs },
      app.log,
      metrics.changes.webhooks,
      deps.tracing?.deliveries,
    );
    app.addHook('onReady', (done) => {
      webhooks.start();
      done();
    });
    app.addHook('onClose', async () => webhooks.stop());
  }
  return app;
}
