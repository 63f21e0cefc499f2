import { Type } from 'typebox';
import { cap, integer } from '../http/schemas.ts';
import { EVENT_FIELDS, fieldList } from '../record/fields.ts';
import { MAX_ID } from '../store/store.ts';
import { ListQuery } from '../users/schemas.ts';

/** What the stream's own parameter must be, in error details and the document. */
export const EVENT_RULES = {
  eventId: 'a whole number of up to 15 digits (the id of the last event received)',
} as const;

/** The pattern of an event id (a change version), in `after` and `Last-Event-ID`. */
export const EVENT_ID_PATTERN = '^[0-9]{1,15}$';

/**
 * The listing's parameters a stream has no use for, each with why: refused with that reason. The
 * listing's `after` (a record id) is not among its filters either: the stream's `after` is an event id.
 */
export const LISTING_ONLY = {
  sort: 'is for GET /users: a stream sends changes in change-version order',
  limit: 'is for GET /users: a stream has no pages (it resumes with Last-Event-ID)',
  cursor: 'is for GET /users: a stream has no pages (it resumes with Last-Event-ID)',
  fields: `is for GET /users: an event carries the record's ${fieldList(EVENT_FIELDS, 'and')}`,
} as const;

/**
 * The listing's filters (exact values, ranges, `q`), with the listing's own schemas: what a stream
 * may follow, and a webhook (after the `#` of its URL).
 */
export const Filters = Type.Omit(
  ListQuery,
  ['sort', 'limit', 'cursor', 'fields', 'after'] satisfies Array<keyof typeof LISTING_ONLY | 'after'>,
  { additionalProperties: false, 'x-refused': LISTING_ONLY },
);

/** GET /users/events: where to resume, and which records to follow (the listing's filters). */
export const EventsQuery = Type.Object(
  {
    ...Filters.properties,
    after: Type.Optional(
      Type.String({
        pattern: EVENT_ID_PATTERN,
        description: `${cap(EVENT_RULES.eventId)}: the stream starts with the changes after it. \`Last-Event-ID\` wins over it. Without either, only changes from now on.`,
        examples: ['0'],
        ...integer(0, MAX_ID),
      }),
    ),
  },
  // `after` is an event id here, a record id in a listing.
  { additionalProperties: false, 'x-refused': LISTING_ONLY, 'x-rules': { after: EVENT_RULES.eventId } },
);

export const EventsHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({
      pattern: EVENT_ID_PATTERN,
      description: `${cap(EVENT_RULES.eventId)}; browsers' EventSource sends it when they reconnect.`,
    }),
  ),
});
