import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { PUBLIC_ROUTES } from '../http/auth.ts';
import { NOT_RATE_LIMITED, NOT_SHED } from '../http/limits.ts';
import { allowOnly } from '../http/methods.ts';
import { PROBLEM_CONTENT_TYPE } from '../http/problem.ts';
import { ERROR_MEANINGS, ProblemSchema } from '../http/schemas.ts';
import { DOCS_CSP } from '../http/security-headers.ts';

export const API_VERSION = '1.0.0';

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

const READ_METHODS = new Set(['get', 'head', 'options']);

function problemResponse(description: string) {
  return { description, content: { [PROBLEM_CONTENT_TYPE]: { schema: ProblemSchema } } };
}

/**
 * The answers every operation may give whatever its schema says: 414 for a long URL, 429 from the
 * rate limit (probes are not limited), 503 when overloaded (liveness is never shed). Public
 * operations need no token (`security: []`); the rest declare the 401 and, when they write, the 403
 * that come with tokens configured.
 */
function markCommonResponses(document: OpenApiPaths) {
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(item)) {
      const common = (operation.responses ??= {});
      common['414'] ??= problemResponse('The URL is longer than 8 KiB.');
      if (!NOT_RATE_LIMITED.has(path)) {
        common['429'] ??= problemResponse(
          'This client sent more requests this minute than RATE_LIMIT allows; retry after Retry-After seconds.',
        );
      }
      if (!NOT_SHED.has(path)) common['503'] ??= problemResponse(ERROR_MEANINGS[503] ?? 'Unavailable.');
      if (PUBLIC_ROUTES.has(path)) {
        operation.security = [];
        continue;
      }
      const responses = (operation.responses ??= {});
      responses['401'] ??= problemResponse('Tokens are configured and this request had none, or a wrong one.');
      if (!READ_METHODS.has(method)) responses['403'] ??= problemResponse('The token may only read.');
    }
  }
  return document;
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
        version: API_VERSION,
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
    transformObject: (documentObject) =>
      'openapiObject' in documentObject
        ? markCommonResponses(markBodyAlternatives(documentObject.openapiObject as OpenApiPaths))
        : documentObject.swaggerObject,
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { docExpansion: 'list', deepLinking: true, validatorUrl: null },
    // Replaces the JSON answers' CSP on the docs routes; the default one allows remote styles and fonts.
    staticCSP: DOCS_CSP,
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  allowOnly(app, '/openapi.json', ['GET']);
}
