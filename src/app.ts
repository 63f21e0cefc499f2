import Fastify, { type FastifyInstance, LogController } from 'fastify';
import type { Config } from './config.ts';
import { malformedParameters, registerBodyParsers } from './http/body-parsers.ts';
import { registerConditionalGet } from './http/conditional.ts';
import { clientErrorHandler, frameworkErrors, registerErrorHandlers } from './http/errors.ts';
import { loggerOptions, requestId } from './http/logging.ts';
import { registerAllMethods } from './http/methods.ts';
import { MALFORMED, type ParsedParams, parseParams } from './http/query-string.ts';
import { createValidatorCompiler } from './http/validation.ts';
import { registerDocs } from './ops/docs.ts';
import { registerHealthRoutes } from './ops/health.ts';
import type { UserStore } from './store/store.ts';
import { registerUserRoutes } from './users/routes.ts';
import { RULES } from './users/schemas.ts';

export const BODY_LIMIT = 64 * 1024;

export interface AppDeps {
  store: UserStore;
}

/** The whole service, ready for requests; tests and the server build it the same way. */
export async function buildApp(config: Pick<Config, 'logLevel'>, deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    logger: loggerOptions(config.logLevel),
    genReqId: requestId,
    requestIdHeader: false,
    logController: new LogController({ requestIdLogLabel: 'requestId' }),
    bodyLimit: BODY_LIMIT,
    routerOptions: { querystringParser: parseParams, maxParamLength: 8192 },
    frameworkErrors,
    clientErrorHandler,
    return503OnClosing: false,
  });

  app.setValidatorCompiler(createValidatorCompiler(RULES));
  registerAllMethods(app);
  registerBodyParsers(app);
  registerErrorHandlers(app);
  registerConditionalGet(app);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    const malformed = (request.query as ParsedParams)[MALFORMED];
    if (malformed !== undefined) throw malformedParameters(malformed);
  });

  await registerDocs(app);
  registerHealthRoutes(app, deps.store);
  registerUserRoutes(app, deps.store);
  return app;
}
