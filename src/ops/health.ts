import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { allowOnly } from '../http/methods.ts';
import { withPolicy } from '../http/policy.ts';
import { HttpError } from '../http/problem.ts';
import { jsonResponse, problemResponses } from '../http/schemas.ts';
import type { UserStore } from '../store/store.ts';

const Status = Type.Object({ status: Type.Literal('ok') }, { title: 'Status' });
/** No parameters: an unknown one is refused here as on every other route. */
const NoQuery = Type.Object({}, { additionalProperties: false });

/** Whether the service is stopping: set on SIGTERM by src/serve.ts, read by `/readyz`. */
export interface Lifecycle {
  draining: boolean;
  /** Ends every open event stream, each telling its client to reconnect (set by buildApp; ops/hand-over.ts). */
  endStreams?: () => void;
}

/**
 * `/healthz`: the process answers. `/readyz`: and its database answers too, and it is not stopping
 * (after SIGTERM it goes on serving for SHUTDOWN_DELAY_MS, so that balancers move away first).
 */
export function registerHealthRoutes(app: FastifyInstance, store: UserStore, lifecycle: Lifecycle): void {
  // Probes: no token, not rate limited (a load balancer probes from one address for everyone).
  // Liveness is answered even when overloaded; readiness is shed, so traffic moves elsewhere.
  const live = withPolicy({ public: true, rateLimited: false, shed: false });
  const ready = withPolicy({ public: true, rateLimited: false });
  app.get(
    '/healthz',
    {
      ...live,
      schema: {
        tags: ['operations'],
        summary: 'Liveness: the process is up',
        description: 'Answers even while the service sheds load; no token, not rate limited.',
        operationId: 'getLiveness',
        querystring: NoQuery,
        response: { 200: jsonResponse(Status, 'Alive.'), ...problemResponses(400, 500) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      ...ready,
      schema: {
        tags: ['operations'],
        summary: 'Readiness: the database answers',
        description:
          'A round trip to the database; 503 while it does not answer, while the service sheds load, or once it is stopping (SIGTERM: for SHUTDOWN_DELAY_MS it goes on serving everything else).',
        operationId: 'getReadiness',
        querystring: NoQuery,
        response: { 200: jsonResponse(Status, 'Ready.'), ...problemResponses(400, 500, 503) },
      },
    },
    async (request) => {
      if (lifecycle.draining) {
        throw new HttpError('unavailable', 'The service is stopping; send new work to another instance.', {
          headers: { 'retry-after': '1' },
        });
      }
      try {
        await store.ping();
      } catch (error) {
        request.log.warn({ err: error }, 'database not reachable');
        throw new HttpError('unavailable', 'The database is not reachable.', { headers: { 'retry-after': '1' } });
      }
      return { status: 'ok' as const };
    },
  );

  allowOnly(app, '/healthz', ['GET'], live.config.policy);
  allowOnly(app, '/readyz', ['GET'], ready.config.policy);
}
