import type { IncomingHttpHeaders } from 'node:http';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ifMatchHolds } from '../http/conditional.ts';
import { allowOnly } from '../http/methods.ts';
import { HttpError } from '../http/problem.ts';
import { jsonResponse, problemResponses } from '../http/schemas.ts';
import type { ListFilter, Precondition, User, UserInput, UserStore, WriteResult } from '../store/store.ts';
import { normalizeInput } from './input.ts';
import { envelope, selectedFields, userEtag } from './present.ts';
import {
  FieldsQuery,
  FullInputQuery,
  IdParams,
  InputBody,
  ListQuery,
  PatchInputQuery,
  UsersEnvelope,
} from './schemas.ts';

const TAGS = ['users'];
const ETAG = { ETag: 'The record version (or, for lists, a hash of the body); use it with If-None-Match or If-Match.' };
const NOT_MODIFIED = { 304: { description: 'Not modified: If-None-Match matched the current ETag.', type: 'null' } };
const FORMS = ['application/json', 'application/x-www-form-urlencoded'];

/** `GET|POST /users` and `GET|HEAD|PUT|PATCH|DELETE /users/:id`. */
export function registerUserRoutes(app: FastifyInstance, store: UserStore): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const preValidation = normalizeInput;

  api.get(
    '/users',
    {
      preValidation,
      schema: {
        tags: TAGS,
        summary: 'List records in creation order',
        description:
          'Every stored record, oldest first. Optional exact-match filters (`name`, `age`, `city`) and pages (`limit` with `after`); while more records remain, a `Link: <...>; rel="next"` header gives the next page.',
        querystring: ListQuery,
        response: {
          200: jsonResponse(UsersEnvelope, 'The matching records.', {
            ...ETAG,
            Link: 'The next page, while more remain.',
          }),
          ...NOT_MODIFIED,
          ...problemResponses(400, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const query = request.query;
      const limit = query.limit === undefined ? undefined : Number(query.limit);
      const filter: ListFilter = {
        name: query.name,
        city: query.city,
        age: query.age === undefined ? undefined : Number(query.age),
        afterId: query.after === undefined ? undefined : Number(query.after),
        limit: limit === undefined ? undefined : limit + 1,
      };
      const users = await store.list(filter);
      if (limit !== undefined && users.length > limit) {
        users.length = limit;
        reply.header('link', `<${nextPage(query, users[limit - 1] as User)}>; rel="next"`);
      }
      return envelope(users, selectedFields(query.fields));
    },
  );

  api.post(
    '/users',
    {
      preValidation,
      schema: {
        tags: TAGS,
        summary: 'Create a record',
        description:
          'The parameters go in the query string (the original contract), or as a JSON or form body; not both. Answers 200 with the stored record and a `Location` header.',
        querystring: FullInputQuery,
        body: InputBody,
        consumes: FORMS,
        response: {
          200: jsonResponse(UsersEnvelope, 'The record just stored.', {
            Location: 'The new record, /users/{id}.',
            ...ETAG,
          }),
          ...problemResponses(400, 413, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const query = request.query;
      const user = await store.create(toInput(query));
      reply.header('location', `/users/${user.id}`).header('etag', userEtag(user));
      return envelope([user], selectedFields(query.fields));
    },
  );

  api.get(
    '/users/:id',
    {
      preValidation,
      schema: {
        tags: TAGS,
        summary: 'Read one record',
        params: IdParams,
        querystring: FieldsQuery,
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
      return envelope([user], selectedFields(request.query.fields));
    },
  );

  const writeResponses = {
    200: jsonResponse(UsersEnvelope, 'The record as stored now.', ETAG),
    ...problemResponses(400, 404, 412, 413, 500, 503),
  };

  api.put(
    '/users/:id',
    {
      preValidation,
      schema: {
        tags: TAGS,
        summary: 'Replace a record',
        description: 'All three fields are required. Honours If-Match.',
        params: IdParams,
        querystring: FullInputQuery,
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
        summary: 'Change some fields of a record',
        description: 'At least one of name, age, city. Honours If-Match.',
        params: IdParams,
        querystring: PatchInputQuery,
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
        summary: 'Delete a record',
        description: 'Answers with the deleted record. Honours If-Match. The id is never reused.',
        params: IdParams,
        querystring: FieldsQuery,
        response: {
          200: jsonResponse(UsersEnvelope, 'The record just deleted.'),
          ...problemResponses(400, 404, 412, 413, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const id = parseId(request.params.id);
      const result = await store.remove(id, precondition(request));
      return answer(result, id, reply, request.query.fields, false);
    },
  );

  allowOnly(app, '/users', ['GET', 'POST']);
  allowOnly(app, '/users/:id', ['GET', 'PUT', 'PATCH', 'DELETE']);
}

function toInput(query: { name: string; age: string; city: string }): UserInput {
  return { name: query.name, age: Number(query.age), city: query.city };
}

interface UpdateRequest {
  params: { id: string };
  query: { name?: string; age?: string; city?: string; fields?: string };
  headers: IncomingHttpHeaders;
}

/** PUT and PATCH: the schemas decide which fields are required; this applies the given ones. */
async function update(store: UserStore, request: UpdateRequest, reply: FastifyReply) {
  const id = parseId(request.params.id);
  const { name, age, city, fields } = request.query;
  const changes: Partial<UserInput> = {};
  if (name !== undefined) changes.name = name;
  if (age !== undefined) changes.age = Number(age);
  if (city !== undefined) changes.city = city;
  return answer(await store.update(id, changes, precondition(request)), id, reply, fields);
}

const ID = /^[1-9][0-9]{0,15}$/;

/** A path id: a canonical positive integer, or 404 (there can be no record there). */
function parseId(raw: string): number {
  const id = ID.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(id)) throw new HttpError('not-found', 'There is no record with that id.');
  return id;
}

function noRecord(id: number): HttpError {
  return new HttpError('not-found', `There is no record with id ${id}.`);
}

function precondition(request: { headers: IncomingHttpHeaders }): Precondition | undefined {
  const header = request.headers['if-match'];
  if (header === undefined) return undefined;
  return (current) => ifMatchHolds(header, userEtag(current));
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
  return envelope([result.user], selectedFields(fields));
}

function nextPage(query: ListQuery, last: User): string {
  const params = new URLSearchParams();
  for (const name of ['name', 'age', 'city', 'fields', 'limit'] as const) {
    const value = query[name];
    if (value !== undefined) params.set(name, value);
  }
  params.set('after', String(last.id));
  return `/users?${params}`;
}
