import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { allowOnly } from '../http/methods.ts';
import { HttpError } from '../http/problem.ts';
import { jsonResponse, problemResponses } from '../http/schemas.ts';
import type { UserStore } from '../store/store.ts';

const Status = Type.Object({ status: Type.Literal('ok') });

/** `/healthz`: the process answers. `/readyz`: and its database answers too. */
export function registerHealthRoutes(app: FastifyInstance, store: UserStore): void {
  app.get(
    '/healthz',
    {
      schema: {
        tags: ['operations'],
        summary: 'Liveness: the process is up',
        response: { 200: jsonResponse(Status, 'Alive.'), ...problemResponses(400, 500) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags: ['operations'],
        summary: 'Readiness: the database answers',
        response: { 200: jsonResponse(Status, 'Ready.'), ...problemResponses(400, 500, 503) },
      },
    },
    async (request) => {
      try {
        await store.ping();
      } catch (error) {
        request.log.warn({ err: error }, 'database not reachable');
        throw new HttpError('unavailable', 'The database is not reachable.', { headers: { 'retry-after': '1' } });
      }
      return { status: 'ok' as const };
    },
  );

  allowOnly(app, '/healthz', ['GET']);
  allowOnly(app, '/readyz', ['GET']);
}
