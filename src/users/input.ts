import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from '../http/problem.ts';
import { addParamErrors, MAX_PARAMETERS, paramErrors, tooManyParameters } from '../http/query-string.ts';
import { RECORD_FIELDS } from './schemas.ts';

const FIELDS = new Set<string>(RECORD_FIELDS);

/**
 * Brings the input of a /users request into one shape before the schema checks it. The input comes
 * either in the query string or in a body (JSON or form), never split between them: with a body,
 * `name`, `age` and `city` may only be in the body, and the query string keeps only `fields`. The
 * body's fields are merged into the query object, so one schema judges both forms and every fault
 * is reported at once. Then `name` and `city` are trimmed, and a JSON integer `age` becomes its
 * decimal string.
 */
export function normalizeInput(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void {
  const query = request.query as Record<string, unknown>;
  const body: unknown = request.body;
  if (body !== undefined) {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      return done(new HttpError('invalid-input', 'The body must be a JSON object of parameters.'));
    }
    addParamErrors(query, paramErrors(body));
    addParamErrors(
      query,
      Object.keys(query)
        .filter((name) => FIELDS.has(name))
        .map((parameter) => ({
          parameter,
          detail: 'is in the query string but the request has a body; send name, age and city one way',
        })),
    );
    let read = 0;
    for (const name in body) {
      if (++read > MAX_PARAMETERS) {
        addParamErrors(query, [tooManyParameters()]);
        break;
      }
      if (FIELDS.has(name)) query[name] = (body as Record<string, unknown>)[name];
      else addParamErrors(query, [{ parameter: name, detail: 'is not a field the body can carry' }]);
    }
    request.body = undefined;
  }
  for (const name of ['name', 'city']) {
    const value = query[name];
    if (typeof value === 'string') query[name] = value.trim();
  }
  if (typeof query.age === 'number' && Number.isSafeInteger(query.age)) query.age = String(query.age);
  done();
}
