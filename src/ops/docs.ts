import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';
import { VERSION } from '../config/version.ts';
import { kib, URL_LIMIT } from '../http/limits.ts';
import { allowOnly } from '../http/methods.ts';
import { type PolicyConfig, withPolicy } from '../http/policy.ts';
import { PROBLEM_CONTENT_TYPE } from '../http/problem.ts';
import { ERROR_MEANINGS, ProblemSchema } from '../http/schemas.ts';
import { DOCS_CSP } from '../http/security-headers.ts';

interface Operation {
  security?: Array<Record<string, string[]>>;
  responses?: Record<string, unknown>;
  parameters?: Array<{ in: string; name: string; required?: boolean; description?: string }>;
  requestBody?: { required?: boolean; content?: Record<string, { schema?: { properties?: object } }> };
}

/**
 * Where a body may carry the same parameters as the query string, neither form is required on its
 * own: the body becomes optional and those query parameters are marked "required unless in the body".
 */
type OpenApiPaths = { paths?: Record<string, Record<string, Operation>> };

function markBodyAlternatives(document: OpenApiPaths) {
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item)) {
      const body = operation.requestBody;
      if (body === undefined) continue;
      body.required = false;
      const carried = new Set(
        Object.values(body.content ?? {}).flatMap((media) => Object.keys(media.schema?.properties ?? {})),
      );
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in !== 'query' || !carried.has(parameter.name) || parameter.required !== true) continue;
        parameter.required = false;
        parameter.description = `Required, here or in the body (not both). ${parameter.description ?? ''}`.trim();
      }
    }
  }
  return document;
}

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

function problemResponse(description: string) {
  return { description, content: { [PROBLEM_CONTENT_TYPE]: { schema: ProblemSchema } } };
}

/**
 * The answers an operation may give whatever its schema says, from the policy its route declares:
 * 414 for a long URL, 429 when rate limited, 503 when it may be shed; public operations need no
 * token (`security: []`), the rest declare the 401 and, when they write, the 403 that come with
 * tokens configured.
 */
function withCommonResponses({ schema, url, route }: { schema: FastifySchema; url: string; route: RouteOptions }) {
  const policy = (route.config as PolicyConfig | undefined)?.policy ?? {};
  const response: Record<string, unknown> = { ...(schema.response as Record<string, unknown> | undefined) };
  response['414'] ??= problemResponse(`The URL is longer than ${kib(URL_LIMIT)}.`);
  if (policy.rateLimited !== false) {
    response['429'] ??= problemResponse(
      'This client sent more requests this minute than RATE_LIMIT allows; retry after Retry-After seconds.',
    );
  }
  if (policy.shed !== false) response['503'] ??= problemResponse(ERROR_MEANINGS[503] ?? 'Unavailable.');
  if (policy.public === true) return { schema: { ...schema, response, security: [] }, url };
  response['401'] ??= problemResponse('Tokens are configured and this request had none, or a wrong one.');
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  if (methods.some((method) => !READ_METHODS.has(method))) {
    response['403'] ??= problemResponse('The token may only read.');
  }
  return { schema: { ...schema, response }, url };
}

/**
 * The OpenAPI 3.1 document, generated from the route schemas that validate requests, at
 * `/openapi.json`, and a Swagger UI page for it at `/docs` that loads nothing from the internet.
 */
export async function registerDocs(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'user-records',
        version: VERSION,
        description:
          'Stores and serves user records (name, age, city). The unversioned paths are version 1 and stay compatible. Errors are RFC 9457 problem details.',
      },
      tags: [
        { name: 'users', description: 'The user records' },
        { name: 'operations', description: 'Health and documentation' },
      ],
      // Enforced only when the service has tokens configured (API_TOKENS); the docs page can send one.
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description: 'A read token (GET, HEAD) or a write token (everything), when tokens are configured.',
          },
        },
      },
      security: [{ bearerAuth: [] }],
    },
    exposeHeadRoutes: true,
    transform: withCommonResponses,
    transformObject: (documentObject) =>
      'openapiObject' in documentObject
        ? markBodyAlternatives(documentObject.openapiObject as OpenApiPaths)
        : documentObject.swaggerObject,
  });
  // The docs page's routes are Swagger UI's; they get their policy as they are added.
  await app.register(async (docs) => {
    docs.addHook('onRoute', (route) => {
      route.config = { ...route.config, ...withPolicy({ public: true, pageCsp: DOCS_CSP }).config };
    });
    await docs.register(swaggerUi, {
      routePrefix: '/docs',
      uiConfig: { docExpansion: 'list', deepLinking: true, validatorUrl: null },
    });
  });
  const openapi = withPolicy({ public: true });
  app.get('/openapi.json', { ...openapi, schema: { hide: true } }, async () => app.swagger());
  allowOnly(app, '/openapi.json', ['GET'], openapi.config.policy);
}
