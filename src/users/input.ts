import type { FastifyRequest } from 'fastify';
import { HttpError } from '../http/problem.ts';

/**
 * Brings the input of a /users request into one shape before the schema checks it: the body (JSON
 * or form) carries the same parameters as the query string, so it is merged into the query, and a
 * parameter sent both ways is refused. Then `name` and `city` are trimmed, and a JSON integer `age`
 * becomes its decimal string. Anything else is left for the schema to judge.
 */
export async function normalizeInput(request: FastifyRequest): Promise<void> {
  const query = request.query as Record<string, unknown>;
  const body: unknown = request.body;
  if (body !== undefined) {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new HttpError('invalid-input', 'The body must be a JSON object of parameters.');
    }
    const names = Object.keys(body);
    const both = names.filter((name) => Object.hasOwn(query, name));
    if (both.length > 0) {
      throw new HttpError('invalid-input', 'Send each parameter either in the query string or in the body, not both.', {
        errors: both.map((parameter) => ({ parameter, detail: 'is in both the query string and the body' })),
      });
    }
    for (const name of names) query[name] = (body as Record<string, unknown>)[name];
    request.body = undefined;
  }
  for (const name of ['name', 'city']) {
    const value = query[name];
    if (typeof value === 'string') query[name] = value.trim();
  }
  if (typeof query.age === 'number' && Number.isSafeInteger(query.age)) query.age = String(query.age);
}
