import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { grantedScope } from '../http/auth.ts';
import { allowOnly } from '../http/methods.ts';
import { withPolicy } from '../http/policy.ts';
import { jsonResponse, problemResponses } from '../http/schemas.ts';

const Scope = Type.Object(
  {
    scope: Type.Union([Type.Literal('read'), Type.Literal('write')], {
      description: '`read`: GET and HEAD only; `write`: everything. Without tokens configured, always `write`.',
    }),
  },
  { title: 'Scope', additionalProperties: false },
);
const NoQuery = Type.Object({}, { additionalProperties: false });

/**
 * `GET /auth/scope`: what the request's token may do, so that a client (the admin page) can show a
 * read-only view without trying a write. Tokens are checked by the gate first, as on every route:
 * without a valid one it answers 401.
 */
export function registerTokenScope(app: FastifyInstance): void {
  app.get(
    '/auth/scope',
    {
      schema: {
        tags: ['operations'],
        summary: 'What this token may do',
        description:
          'The scope of the bearer token sent: `read` or `write`. Without tokens configured, anyone may write: `write`.',
        operationId: 'getTokenScope',
        querystring: NoQuery,
        response: { 200: jsonResponse(Scope, 'The scope.'), ...problemResponses(400, 500) },
      },
    },
    // The gate checked the token and kept its scope; none kept: authentication is off.
    async (request) => ({ scope: grantedScope(request) ?? ('write' as const) }),
  );
  allowOnly(app, '/auth/scope', ['GET'], withPolicy({}).config.policy);
}
