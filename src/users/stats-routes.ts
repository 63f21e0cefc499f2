import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { contentEtag } from '../http/conditional.ts';
import { jsonResponse, problemResponses } from '../http/schemas.ts';
import { GROUP_FIELDS } from '../record/fields.ts';
import type { UserStore } from '../store/store.ts';
import { normalizeInput } from './input.ts';
import { ETAG, NOT_MODIFIED, TAGS } from './openapi.ts';
import { JSON_TYPE } from './present.ts';
import { parseListing } from './query.ts';
import type { ListQuery } from './schemas.ts';
import { ReadHeaders } from './schemas.ts';
import { DEFAULT_GROUPS, StatsEnvelope, StatsQuery } from './stats-schemas.ts';
import { statsJson } from './stats-present.ts';

/**
 * `GET /users/stats`: the records a listing's filters, ranges and search pick, counted by a field's
 * value. Registered beside `/users/:id`, whose ids are numbers: the router takes this static path first.
 */
export function registerStatsRoute(app: FastifyInstance, store: UserStore): void {
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/users/stats',
    {
      preValidation: normalizeInput,
      schema: {
        tags: TAGS,
        operationId: 'userStats',
        summary: 'Count records by city or age, with the least, greatest and mean age',
        description: `The records that match the listing's filters, ranges and search (the same parameters as \`GET /users\`), counted by \`group\` (${GROUP_FIELDS.join(' or ')}; without it, one group of them all), largest group first, at most \`limit\` groups (default ${DEFAULT_GROUPS}). Ages show as records show them, decimal strings; the mean is rounded to two places.`,
        querystring: StatsQuery,
        headers: ReadHeaders,
        response: {
          200: jsonResponse(StatsEnvelope, 'The groups.', {
            ...ETAG,
            'X-Total-Count': 'How many groups there are in all, whatever `limit`.',
          }),
          ...NOT_MODIFIED,
          ...problemResponses(400, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const query = request.query as StatsQuery;
      // The listing's own parser: the same faults, the same filter (sort, pages and fields are not parameters here).
      const { filter } = parseListing(query as ListQuery);
      const limit = query.limit === undefined ? DEFAULT_GROUPS : Number(query.limit);
      const stats = await store.stats(filter, query.group, limit);
      const body = statsJson(stats, query.group);
      const total = String(stats.total);
      // A hash of the answer: its body and its count of groups, which a cut by `limit` may hide.
      reply.header('x-total-count', total).header('etag', contentEtag(`${body}\n${total}`));
      return reply.type(JSON_TYPE).send(body);
    },
  );
}
