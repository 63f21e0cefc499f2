import { METHODS } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { sendProblem } from './errors.ts';
import { type RoutePolicy, withPolicy } from './policy.ts';
import { problem } from './problem.ts';

// CONNECT never reaches a route in Node; every other method Node can parse is made routable so
// that a known path answers 405 (not 404) to any method it does not serve.
const ROUTABLE = METHODS.filter((method) => method !== 'CONNECT');

/** Lets the app route every method Node's HTTP parser accepts. Call once, before routes. */
export function registerAllMethods(app: FastifyInstance): void {
  const known = new Set(app.supportedMethods);
  for (const method of ROUTABLE) {
    if (!known.has(method)) app.addHttpMethod(method, { hasBody: false });
  }
}

/**
 * Declares which methods a path serves: OPTIONS answers 204 with `Allow`, and every other method
 * not in the list answers 405 with `Allow`, in the problem-details shape. They share the policy of
 * the path's own routes.
 */
export function allowOnly(
  app: FastifyInstance,
  url: string,
  served: readonly string[],
  policy: RoutePolicy = {},
): void {
  const allowed = [...served, ...(served.includes('GET') ? ['HEAD'] : []), 'OPTIONS'];
  const allow = allowed.join(', ');
  app.route({
    method: 'OPTIONS',
    url,
    ...withPolicy(policy),
    schema: { hide: true },
    handler: async (_request, reply) => reply.code(204).header('allow', allow).send(),
  });
  const others = ROUTABLE.filter((method) => !allowed.includes(method));
  app.route({
    method: others,
    url,
    ...withPolicy(policy),
    schema: { hide: true },
    exposeHeadRoute: false,
    // Answered in onRequest, before any body is read: a wrong method is the fault, not its body.
    onRequest: async (request, reply) => {
      reply.header('allow', allow);
      return sendProblem(reply, problem('method-not-allowed', `${request.method} is not served here; use ${allow}.`));
    },
    handler: async () => undefined,
  });
}
