import { Type } from 'typebox';
import { cap, integer } from '../http/schemas.ts';
import { MAX_ID } from '../store/store.ts';

/** What the stream's own parameter must be, in error details and the document. */
export const EVENT_RULES = {
  eventId: 'a whole number of up to 15 digits (the id of the last event received)',
} as const;

/** The pattern of an event id (a change version), in `after` and `Last-Event-ID`. */
export const EVENT_ID_PATTERN = '^[0-9]{1,15}$';

/** GET /users/events: where to resume. */
export const EventsQuery = Type.Object(
  {
    after: Type.Optional(
      Type.String({
        pattern: EVENT_ID_PATTERN,
        description: `${cap(EVENT_RULES.eventId)}: the stream starts with the changes after it. \`Last-Event-ID\` wins over it. Without either, only changes from now on.`,
        examples: ['0'],
        ...integer(0, MAX_ID),
      }),
    ),
  },
  { additionalProperties: false },
);

export const EventsHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({
      pattern: EVENT_ID_PATTERN,
      description: `${cap(EVENT_RULES.eventId)}; browsers' EventSource sends it when they reconnect.`,
    }),
  ),
});
