import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { jsonResponse, problemResponses } from '../http/schemas.ts';
import type { ListFilter, User, UserStore } from '../store/store.ts';
import { FullListing } from './full-listing.ts';
import { batchOf, checkedBatch } from './batch.ts';
import { batchFingerprintOf, checkIdempotencyKey, createIdempotently, refusedKey } from './idempotency.ts';
import { normalizeCreateInput, normalizeInput } from './input.ts';
import { ETAG, FORMS, NOT_MODIFIED, TAGS, withListingFormats } from './openapi.ts';
import { JSON_TYPE, sendUsers, userEtag } from './present.ts';
import { formatEtag, JSON_FORMAT, listingFormat, pageBody } from './listing-formats.ts';
import { RECORD_FIELDS } from '../record/fields.ts';
import { selectedFields } from '../record/json.ts';
import { valuesOf } from '../record/rules.ts';
import { listingStream, streamedEtag, versionEtag } from './listing.ts';
import { contentEtag } from '../http/conditional.ts';
import { encodeCursor, parseListing, wantsCount } from './query.ts';
import { Type } from 'typebox';
import { NDJSON_TYPE } from '../http/body-parsers.ts';
import { BATCH_BODY_LIMIT, MAX_BATCH } from '../http/limits.ts';
import { CreateHeaders, FullInputQuery, InputBody, ListHeaders, ListQuery, UsersEnvelope } from './schemas.ts';

/** `GET /users` (all records, or filtered pages) and `POST /users`. */
export function registerCollectionRoutes(app: FastifyInstance, store: UserStore, listingCacheBytes: number): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const preValidation = normalizeInput;
  const fullListing = new FullListing(store, listingCacheBytes);

  api.get(
    '/users',
    {
      preValidation,
      schema: {
        tags: TAGS,
        operationId: 'listUsers',
        summary: 'List records: every one, or filtered, searched, sorted and paged',
        description: `Every stored record, oldest first. Optional exact-match filters (${RECORD_FIELDS.map((field) => `\`${field}\``).join(', ')}), ranges (\`age.gte\`, \`createdAt.lt\`, ...), a search (\`q\`), a sort (\`sort\`) and pages (\`limit\` with \`after\`, or with \`sort\` the \`cursor\` of the Link); while more records remain, a \`Link: <...>; rel="next"\` header gives the next page. \`Prefer: count=exact\` adds \`X-Total-Count\`. By \`Accept\`, the records come as JSON (the default, and the answer to \`*/*\`), as CSV (\`text/csv\`: a header row of the fields, then a row per record) or as NDJSON (\`application/x-ndjson\`: a JSON object per line), with the same headers; 406 when Accept takes none of them.`,
        querystring: ListQuery,
        headers: ListHeaders,
        response: {
          200: withListingFormats(
            jsonResponse(UsersEnvelope, 'The matching records, in the format Accept asks for.', {
              ...ETAG,
              Link: 'The next page, while more remain (with `sort`, it carries a `cursor`).',
              'X-Total-Count': 'With `Prefer: count=exact`: how many records match, whatever `limit` and the page.',
              'Preference-Applied': 'With `Prefer: count=exact`: `count=exact`.',
            }),
          ),
          ...NOT_MODIFIED,
          ...problemResponses(400, 406, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const query = request.query;
      const count = wantsCount(request.headers.prefer);
      // The answer differs with Accept (its format) and Prefer (X-Total-Count): a cache must not give one for another.
      const vary = reply.getHeader('vary');
      reply.header('vary', vary === undefined ? 'Accept, Prefer' : `${String(vary)}, Accept, Prefer`);
      const format = listingFormat(request.headers.accept);
      // registerConditionalGet answers 304 when the ETag set here matches If-None-Match.
      if (Object.keys(query).length === 0 && format === JSON_FORMAT) {
        const listing = await fullListing.get();
        reply.header('etag', versionEtag(listing, !listing.exact));
        // The kept copy's own count: of the very version its strong tag names.
        if (count && listing.count !== undefined) countHeader(reply, listing.count);
        else if (count) await countHeaders(reply, store, {});
        return reply.type(JSON_TYPE).send(listing.body);
      }
      const fields = selectedFields(query.fields);
      const { filter, order, sortText } = parseListing(query);
      if (count) await countHeaders(reply, store, filter);
      if (query.limit === undefined) {
        // Every match, however many: streamed page by page, never built whole in memory.
        const position = await store.position();
        const body = await listingStream(store, filter, order, fields, format);
        reply.header('etag', formatEtag(streamedEtag(position, request.url), format));
        return reply.type(format.type).send(body);
      }
      const limit = Number(query.limit);
      const users = await store.list({ ...filter, limit: limit + 1 }, order);
      if (users.length > limit) {
        users.length = limit;
        const last = users[limit - 1] as User;
        const next =
          order === undefined || sortText === undefined
            ? { after: String(last.id) }
            : { cursor: encodeCursor(sortText, order.sort, last) };
        reply.header('link', `<${nextPage(query, next)}>; rel="next"`);
      }
      // A hash of what the page answers: its body, and its Link and count, which change without it.
      const body = pageBody(format, users, fields);
      const link = reply.getHeader('link') ?? '';
      const hash = contentEtag(`${body}\n${String(link)}\n${String(reply.getHeader('x-total-count') ?? '')}`);
      reply.header('etag', formatEtag(hash, format));
      return reply.type(format.type).send(body);
    },
  );

  api.post(
    '/users',
    {
      preValidation: [normalizeCreateInput, checkIdempotencyKey],
      // A batch's query string carries only `fields`: it is checked with the records (batch.ts),
      // and the single create's schema, which requires the fields, is not held against it.
      attachValidation: true,
      bodyLimit: BATCH_BODY_LIMIT,
      schema: {
        tags: TAGS,
        operationId: 'createUser',
        summary: 'Create a record, or many at once',
        description: `The parameters go in the query string (the original contract), or as a JSON or form body; not both. Answers 200 with the stored record and a \`Location\` header. With an \`Idempotency-Key\`, a retry with the same input within 24 hours stores nothing and gets the first answer again (with \`Idempotent-Replayed: true\`); the same key with other input answers 422.\n\n**Many records at once:** a JSON array of record objects, or \`${NDJSON_TYPE}\` (one record object per line), up to ${MAX_BATCH} records (413 past it). All are stored or none, in one transaction, each checked by the same rules; a fault is named by its place (\`"parameter": "/3/age"\`, a JSON Pointer into the array). The answer holds every stored record in the array's order (ids rise in that order), one change event each; an \`Idempotency-Key\` covers the whole batch. The query string may then carry only \`fields\`.`,
        querystring: FullInputQuery,
        headers: CreateHeaders,
        body: Type.Union([InputBody, Type.Array(InputBody, { maxItems: MAX_BATCH })]),
        consumes: [...FORMS, NDJSON_TYPE],
        response: {
          200: jsonResponse(
            UsersEnvelope,
            'The record just stored (or, for a replayed Idempotency-Key, as first stored); for many records at once, every record stored, in order, with no Location or ETag.',
            {
              Location: 'The new record, /users/{id} (not sent for many records).',
              'Content-Location':
                'The same: the body is a representation of the new record (not sent for many records).',
              ...ETAG,
              'Idempotent-Replayed':
                '"true" when this is the remembered answer to an earlier request with the same Idempotency-Key.',
            },
          ),
          ...problemResponses(400, 409, 413, 422, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const query = request.query;
      const batch = batchOf(request);
      if (batch !== undefined) {
        const inputs = checkedBatch(request, batch);
        const fields = selectedFields(query.fields);
        const key = request.headers['idempotency-key'] as string | undefined;
        const idempotency = key === undefined ? undefined : { key, fingerprint: batchFingerprintOf(inputs, fields) };
        const result = await store.createMany(inputs, idempotency);
        if (!result.ok) throw refusedKey(result.reason, true);
        if (result.replayed) reply.header('idempotent-replayed', 'true');
        return sendUsers(reply, result.users, fields);
      }
      if (request.validationError !== undefined) throw request.validationError;
      const fields = selectedFields(query.fields);
      const key = request.headers['idempotency-key'];
      const { user, replayed } = await createIdempotently(store, valuesOf(query), fields, key);
      // Content-Location makes the body a representation of the new record, which the ETag then describes.
      const location = `/users/${user.id}`;
      reply.header('location', location).header('content-location', location).header('etag', userEtag(user));
      if (replayed) reply.header('idempotent-replayed', 'true');
      return sendUsers(reply, [user], fields);
    },
  );
}

/** The parameters of a listing in the order its Links give them; `after` or `cursor` comes last. */
const LINK_ORDER = Object.keys(ListQuery.properties).filter((name) => name !== 'after' && name !== 'cursor');
const FIELDS_LAST = [...LINK_ORDER.filter((name) => name !== 'fields' && name !== 'limit'), 'fields', 'limit'];

function nextPage(query: ListQuery, position: { after: string } | { cursor: string }): string {
  const params = new URLSearchParams();
  for (const name of FIELDS_LAST) {
    const value = query[name];
    if (value !== undefined) params.set(name, value);
  }
  for (const [name, value] of Object.entries(position)) params.set(name, value);
  return `/users?${params}`;
}

/** `X-Total-Count` for `Prefer: count=exact`: every record that matches, ignoring pages. */
async function countHeaders(reply: FastifyReply, store: UserStore, filter: ListFilter): Promise<void> {
  countHeader(reply, await store.count({ ...filter, afterId: undefined }));
}

function countHeader(reply: FastifyReply, total: number): void {
  reply.header('x-total-count', String(total)).header('preference-applied', 'count=exact');
}
