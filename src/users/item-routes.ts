import type { IncomingHttpHeaders } from 'node:http';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { HttpError } from '../http/problem.ts';
import { jsonResponse, problemResponses } from '../http/schemas.ts';
import type { Precondition, UserStore, WriteResult } from '../store/store.ts';
import { normalizeInput } from './input.ts';
import { ETAG, FORMS, NOT_MODIFIED, TAGS } from './openapi.ts';
import { preconditionOf, sendUsers, userEtag } from './present.ts';
import { RECORD_FIELDS, type RecordField } from '../record/fields.ts';
import { selectedFields } from '../record/json.ts';
import { someValuesOf } from '../record/rules.ts';
import {
  FieldsQuery,
  FullInputQuery,
  IdParams,
  InputBody,
  PatchInputQuery,
  ReadHeaders,
  UsersEnvelope,
  WriteHeaders,
} from './schemas.ts';

/** `GET|HEAD|PUT|PATCH|DELETE /users/:id`. */
export function registerItemRoutes(app: FastifyInstance, store: UserStore): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const preValidation = normalizeInput;

  api.get(
    '/users/:id',
    {
      // A GET has no body and its query only `fields`: there is no input to bring into shape.
      schema: {
        tags: TAGS,
        operationId: 'getUser',
        summary: 'Read one record',
        description: 'The record with its `ETag`; `If-None-Match` with that ETag answers 304 while it has not changed.',
        params: IdParams,
        querystring: FieldsQuery,
        headers: ReadHeaders,
        response: {
          200: jsonResponse(UsersEnvelope, 'The record.', ETAG),
          ...NOT_MODIFIED,
          ...problemResponses(400, 404, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const id = parseId(request.params.id);
      const user = await store.get(id);
      if (user === undefined) throw noRecord(id);
      reply.header('etag', userEtag(user));
      return sendUsers(reply, [user], selectedFields(request.query.fields));
    },
  );

  const writeResponses = {
    200: jsonResponse(UsersEnvelope, 'The record as stored now.', ETAG),
    ...problemResponses(400, 404, 409, 412, 413, 500, 503),
  };

  api.put(
    '/users/:id',
    {
      preValidation,
      schema: {
        tags: TAGS,
        operationId: 'replaceUser',
        summary: 'Replace a record',
        description: 'All three fields are required. Honours If-Match.',
        params: IdParams,
        querystring: FullInputQuery,
        headers: WriteHeaders,
        body: InputBody,
        consumes: FORMS,
        response: writeResponses,
      },
    },
    async (request, reply) => update(store, request, reply),
  );

  api.patch(
    '/users/:id',
    {
      preValidation,
      schema: {
        tags: TAGS,
        operationId: 'updateUser',
        summary: 'Change some fields of a record',
        description: `At least one of ${RECORD_FIELDS.join(', ')}. Honours If-Match.`,
        params: IdParams,
        querystring: PatchInputQuery,
        headers: WriteHeaders,
        body: InputBody,
        consumes: FORMS,
        response: writeResponses,
      },
    },
    async (request, reply) => update(store, request, reply),
  );

  api.delete(
    '/users/:id',
    {
      preValidation,
      schema: {
        tags: TAGS,
        operationId: 'deleteUser',
        summary: 'Delete a record',
        description: 'Answers with the deleted record. Honours If-Match. The id is never reused.',
        params: IdParams,
        querystring: FieldsQuery,
        headers: WriteHeaders,
        response: {
          200: jsonResponse(UsersEnvelope, 'The record just deleted.'),
          ...problemResponses(400, 404, 409, 412, 413, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const id = parseId(request.params.id);
      const result = await store.remove(id, precondition(request, id));
      return answer(result, id, reply, request.query.fields, false);
    },
  );
}

interface UpdateRequest {
  params: { id: string };
  query: Partial<Record<RecordField, string>> & { fields?: string };
  headers: IncomingHttpHeaders;
}

/** PUT and PATCH: the schemas decide which fields are required; this applies the given ones. */
async function update(store: UserStore, request: UpdateRequest, reply: FastifyReply) {
  const id = parseId(request.params.id);
  const changes = someValuesOf(request.query);
  return answer(await store.update(id, changes, precondition(request, id)), id, reply, request.query.fields);
}

const ID = /^0*[1-9][0-9]{0,15}$/;

/** A path id: a positive integer (leading zeros allowed, as in every number), or 404. */
function parseId(raw: string): number {
  const id = ID.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(id)) throw new HttpError('not-found', 'There is no record with that id.');
  return id;
}

function noRecord(id: number): HttpError {
  return new HttpError('not-found', `There is no record with id ${id}.`);
}

function precondition(request: { headers: IncomingHttpHeaders }, id: number): Precondition | undefined {
  const header = request.headers['if-match'];
  return header === undefined ? undefined : preconditionOf(header, id);
}

function answer(result: WriteResult, id: number, reply: FastifyReply, fields: string | undefined, withEtag = true) {
  if (!result.ok) {
    if (result.reason === 'not-found') throw noRecord(id);
    throw new HttpError(
      'precondition-failed',
      'The record has changed since the ETag in If-Match was read; nothing was changed.',
    );
  }
  if (withEtag) reply.header('etag', userEtag(result.user));
  return sendUsers(reply, [result.user], selectedFields(fields));
}
