import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

export const API_VERSION = '1.0.0';

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
    },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { docExpansion: 'list', deepLinking: true, validatorUrl: null },
    staticCSP: true,
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
