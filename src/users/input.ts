import type { FastifyReply, FastifyRequest } from 'fastify';
import { bodySize } from '../http/body-parsers.ts';
import { BODY_LIMIT, kib } from '../http/limits.ts';
import { HttpError } from '../http/problem.ts';
import { addParamErrors, MAX_PARAMETERS, paramErrors, tooManyParameters } from '../http/query-string.ts';
import { fieldList, isRecordField, RECORD_FIELDS } from '../record/fields.ts';
import { normalizeValue } from '../record/rules.ts';
import { holdBatch } from './batch.ts';

const SEND_ONE_WAY = `is in the query string but the request has a body; send ${fieldList(RECORD_FIELDS, 'and')} one way`;

/**
 * Brings the input of a /users request into one shape before the schema checks it. The input comes
 * either in the query string or in a body (JSON or form), never split between them: with a body,
 * the record's fields may only be in the body, and the query string keeps only `fields`. The
 * body's fields are merged into the query object, so one schema judges both forms and every fault
 * is reported at once. Then each is brought into shape by the record's input rule (text trimmed,
 * a JSON whole number as its decimal string).
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
        .filter(isRecordField)
        .map((parameter) => ({ parameter, detail: SEND_ONE_WAY })),
    );
    let read = 0;
    for (const name in body) {
      if (++read > MAX_PARAMETERS) {
        addParamErrors(query, [tooManyParameters()]);
        break;
      }
      if (isRecordField(name)) query[name] = (body as Record<string, unknown>)[name];
      else addParamErrors(query, [{ parameter: name, detail: 'is not a field the body can carry' }]);
    }
    request.body = undefined;
  }
  for (const field of RECORD_FIELDS) {
    if (query[field] !== undefined) query[field] = normalizeValue(field, query[field]);
  }
  done();
}

/**
 * POST /users: an array body (a JSON array, or NDJSON lines) is a batch, checked record by record
 * in the handler (batch.ts); the query string then carries only `fields`. Any other body is one
 * record, as for every other route.
 */
export function normalizeCreateInput(
  request: FastifyRequest,
  reply: FastifyReply,
  done: (error?: Error) => void,
): void {
  if (!Array.isArray(request.body)) {
    // The route reads bodies up to BATCH_BODY_LIMIT for batches; one record keeps every route's limit.
    if (bodySize(request) > BODY_LIMIT) {
      const detail = `The body of one record is larger than the service accepts (${kib(BODY_LIMIT)}).`;
      return done(new HttpError('payload-too-large', detail));
    }
    return normalizeInput(request, reply, done);
  }
  const query = request.query as Record<string, unknown>;
  addParamErrors(
    query,
    Object.keys(query)
      .filter(isRecordField)
      .map((parameter) => ({ parameter, detail: SEND_ONE_WAY })),
  );
  holdBatch(request, request.body as unknown[]);
  done();
}
