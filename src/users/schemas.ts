import { type Static, type TSchema, Type } from 'typebox';
import { MAX_ID } from '../store/store.ts';
import { IDEMPOTENCY_KEY_PATTERN, IDEMPOTENCY_KEY_RULE } from './idempotency.ts';

/**
 * The schemas of the users API. Each one validates requests, types the handlers and is published
 * in the OpenAPI document, so the rules below are the whole truth about what the service accepts.
 */

/** What each parameter must be; used both in the OpenAPI descriptions and in error details. */
export const RULES = {
  name: 'text of 1 to 200 characters with a visible one among them, and no control, text-direction or noncharacter code points',
  city: 'text of 1 to 200 characters with a visible one among them, and no control, text-direction or noncharacter code points',
  age: 'a whole number from 0 to 150, in decimal digits',
  fields: 'a comma-separated list of: id, name, age, city, createdAt, updatedAt',
  limit: 'a whole number from 1 to 1000',
  after: 'a whole number (the id of the last record of the previous page)',
  sort: 'a comma-separated list of fields to sort by (id, name, age, city, createdAt, updatedAt), each at most once, a leading - for descending',
  q: 'text of 1 to 200 characters with no control characters',
  cursor: 'the cursor of a Link to the next page, as given',
  id: 'a whole number (an id)',
  time: 'an RFC 3339 date and time, such as 2026-01-31T12:00:00Z',
  eventId: 'a whole number of up to 15 digits (the id of the last event received)',
} as const;

export const RECORD_FIELDS = ['name', 'age', 'city'] as const;
export const ALL_FIELDS = ['id', 'name', 'age', 'city', 'createdAt', 'updatedAt'] as const;
export type FieldName = (typeof ALL_FIELDS)[number];

// Text a person can read back: at least one letter, digit, punctuation mark or symbol (so no name
// of only spaces or zero-width characters), and none of: C0/C1 control characters, lone surrogates
// (the `u` flag makes a paired surrogate one code point, so only unpaired halves fall in the
// range), the marks and overrides that reorder text (U+061C, U+200E-F, U+202A-E, U+2066-9), or
// Unicode noncharacters. Lengths count code points.
const FORBIDDEN =
  '\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u202A-\\u202E\\u2066-\\u2069\\uD800-\\uDFFF\\uFDD0-\\uFDEF\\uFFFE\\uFFFF' +
  Array.from(
    { length: 16 },
    (_, plane) => `\\u{${(plane + 1).toString(16)}FFFE}\\u{${(plane + 1).toString(16)}FFFF}`,
  ).join('');
const TEXT_PATTERN = `^(?=.*[\\p{L}\\p{N}\\p{P}\\p{S}])[^${FORBIDDEN}]*$`;
const AGE_PATTERN = '^0*(?:[0-9]|[1-9][0-9]|1[0-4][0-9]|150)$';
const FIELD_ALTERNATIVES = `(?:${ALL_FIELDS.join('|')})`;

/**
 * The same rule as the document shows it, for tools that read patterns without Unicode classes
 * (Swagger UI's form checks, generated clients): a character that is not white space, an
 * invisible format or filler character, or private use among them, and none of the forbidden ones
 * of the Basic Multilingual Plane. The service's check, by Unicode category, also refuses names of
 * only combining marks or unassigned code points, and the noncharacters and invisible characters
 * beyond U+FFFF, which such a pattern cannot name.
 */
const DOCUMENTED_TEXT_PATTERN =
  '^(?=.*[^\\s\\u00AD\\u034F\\u115F\\u1160\\u17B4\\u17B5\\u180B-\\u180F\\u200B-\\u200F\\u2028-\\u202F\\u205F-\\u206F\\u3164\\uE000-\\uF8FF\\uFE00-\\uFE0F\\uFEFF\\uFFA0\\uFFF0-\\uFFFB])[^\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u202A-\\u202E\\u2066-\\u2069\\uFDD0-\\uFDEF\\uFFFE\\uFFFF]*$';

function text(field: 'name' | 'city', example: string) {
  return Type.String({
    minLength: 1,
    maxLength: 200,
    pattern: TEXT_PATTERN,
    description: `${cap(RULES[field])}. Surrounding white space is trimmed before the check.`,
    examples: [example],
    'x-document-as': { type: 'string', minLength: 1, maxLength: 200, pattern: DOCUMENTED_TEXT_PATTERN },
  });
}

function cap(rule: string): string {
  return rule.charAt(0).toUpperCase() + rule.slice(1);
}

const Name = text('name', 'Alice');
const City = text('city', 'Paris');
export { MAX_ID };

/** How the document shows a number that is checked as text: an integer, to a client. */
const integer = (minimum: number, maximum: number) => ({
  'x-document-as': { type: 'integer', minimum, maximum },
});

const Age = Type.String({
  pattern: AGE_PATTERN,
  description: `${cap(RULES.age)}. Stored as an integer and returned as a decimal string.`,
  examples: ['30'],
  ...integer(0, 150),
});
const Fields = Type.String({
  pattern: `^${FIELD_ALTERNATIVES}(?:,${FIELD_ALTERNATIVES})*$`,
  description: `${cap(RULES.fields)}. Default: name,age,city. Keys come out in the order listed here.`,
  examples: ['id,name,age,city'],
});
const Limit = Type.String({
  pattern: '^0*(?:[1-9][0-9]{0,2}|1000)$',
  description: `${cap(RULES.limit)}: the page size. Without it every matching record is returned.`,
  examples: ['100'],
  ...integer(1, 1000),
});
const After = Type.String({
  pattern: '^0*[0-9]{1,15}$',
  description: `${cap(RULES.after)}: only records created after it are returned.`,
  examples: ['0'],
  ...integer(0, MAX_ID),
});

/** A record as the API shows it: `name`, `age`, `city` by default, more with `fields`. */
export const UserRecord = Type.Object(
  {
    id: Type.Optional(Type.Integer({ minimum: 1, description: 'Server-assigned, never reused.' })),
    name: Type.Optional(Type.String()),
    age: Type.Optional(Type.String({ description: 'Decimal digits, e.g. "30".' })),
    city: Type.Optional(Type.String()),
    createdAt: Type.Optional(Type.String({ format: 'date-time', description: 'RFC 3339, UTC.' })),
    updatedAt: Type.Optional(Type.String({ format: 'date-time', description: 'RFC 3339, UTC.' })),
  },
  { additionalProperties: false, title: 'User' },
);

export const UsersEnvelope = Type.Object(
  { data: Type.Array(UserRecord) },
  { additionalProperties: false, title: 'Users', description: 'Every successful body: one key, `data`, an array.' },
);

/** Path parameter; anything that is not a stored positive integer id answers 404. */
export const IdParams = Type.Object({
  id: Type.String({ description: 'The record id, a positive integer.', examples: ['1'] }),
});

const strict = { additionalProperties: false } as const;

const SORT_FIELD = '-?(?:id|name|age|city|createdAt|updatedAt)';
const Sort = Type.String({
  pattern: `^${SORT_FIELD}(?:,${SORT_FIELD}){0,5}$`,
  description: `${cap(RULES.sort)}. Ties are broken by id, ascending; text sorts by Unicode code point. Without it: creation order. With \`limit\`, the \`Link\` to the next page carries a \`cursor\`.`,
  examples: ['age,-name'],
});
const Search = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: '^[^\\u0000-\\u001F\\u007F-\\u009F]*$',
  description: `${cap(RULES.q)}: records whose name or city contains it, ignoring case (Unicode case folding: ß matches ss, ς matches σ) and composed (NFC). From 3 characters an index finds them; shorter text is looked for record by record.`,
  examples: ['ada'],
});
const Cursor = Type.String({
  pattern: '^[A-Za-z0-9_-]{1,2000}$',
  description: `${cap(RULES.cursor)}: where a sorted page starts (opaque; only with the same \`sort\`).`,
});
const IdBound = Type.String({
  pattern: '^0*[0-9]{1,15}$',
  description: `${cap(RULES.id)}.`,
  examples: ['100'],
  ...integer(0, MAX_ID),
});
const AgeBound = Type.String({
  pattern: AGE_PATTERN,
  description: `${cap(RULES.age)}.`,
  examples: ['30'],
  ...integer(0, 150),
});
const TimeBound = Type.String({
  pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\\.[0-9]{1,9})?(?:[Zz]|[+-][0-9]{2}:[0-9]{2})$',
  description: `${cap(RULES.time)} (a leap second, :60, is refused).`,
  examples: ['2026-01-31T12:00:00Z'],
  'x-document-as': {
    type: 'string',
    format: 'date-time',
    pattern:
      '^[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])[Tt](?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,9})?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$',
  },
});
const BOUNDS = { gt: 'above', gte: 'at or above', lt: 'below', lte: 'at or below' } as const;

/** `age.gt` ... `updatedAt.lte`: one optional bound of each kind on each range field. */
function rangeParameters() {
  const fields = { age: AgeBound, id: IdBound, createdAt: TimeBound, updatedAt: TimeBound } as const;
  const parameters: Record<string, TSchema> = {};
  for (const [field, bound] of Object.entries(fields)) {
    for (const [op, words] of Object.entries(BOUNDS)) {
      const rule = (bound as { description?: string }).description ?? '';
      parameters[`${field}.${op}`] = Type.Optional({
        ...bound,
        description: `Only records whose ${field} is ${words} this. ${rule}`,
      });
    }
  }
  return parameters;
}

export const ListQuery = Type.Object(
  {
    name: Type.Optional(Name),
    age: Type.Optional(Age),
    city: Type.Optional(City),
    ...rangeParameters(),
    q: Type.Optional(Search),
    sort: Type.Optional(Sort),
    limit: Type.Optional(Limit),
    after: Type.Optional(After),
    cursor: Type.Optional(Cursor),
    fields: Type.Optional(Fields),
  },
  strict,
);

/** POST and PUT: all three fields. They may come in the query string or in a body, not both. */
export const FullInputQuery = Type.Object({ name: Name, age: Age, city: City, fields: Type.Optional(Fields) }, strict);

/** PATCH: at least one of the three fields. */
export const PatchInputQuery = Type.Object(
  {
    name: Type.Optional(Name),
    age: Type.Optional(Age),
    city: Type.Optional(City),
    fields: Type.Optional(Fields),
  },
  {
    ...strict,
    anyOf: RECORD_FIELDS.map((field) => ({ required: [field] })),
  },
);

export const FieldsQuery = Type.Object({ fields: Type.Optional(Fields) }, strict);

/** The body forms of the input, documented for JSON and form bodies. */
export const InputBody = Type.Object(
  {
    name: Type.Optional(Name),
    age: Type.Optional(
      Type.Union([Age, Type.Integer({ minimum: 0, maximum: 150 })], {
        description: `${cap(RULES.age)}; in JSON a number is accepted too.`,
      }),
    ),
    city: Type.Optional(City),
  },
  strict,
);

export type ListQuery = Static<typeof ListQuery> & Record<string, string | undefined>;
export type FullInputQuery = Static<typeof FullInputQuery>;
export type PatchInputQuery = Static<typeof PatchInputQuery>;
export type UserRecord = Static<typeof UserRecord>;

/** Conditional-request headers, for the OpenAPI document. */
export const ReadHeaders = Type.Object({
  'if-none-match': Type.Optional(
    Type.String({ description: 'An ETag from an earlier answer; 304 with no body when it still matches.' }),
  ),
});

/** GET /users: conditional requests, and the total count on request. */
export const ListHeaders = Type.Object({
  ...ReadHeaders.properties,
  prefer: Type.Optional(
    Type.String({
      description: '`count=exact`: the answer carries X-Total-Count, the number of records that match (RFC 7240).',
      examples: ['count=exact'],
    }),
  ),
});

export const WriteHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({
      description: 'The ETag the change is based on (or *); 412 and no change when the record has changed since.',
    }),
  ),
});

/** POST /users: the retry key, for the OpenAPI document (checked by checkIdempotencyKey). */
export const CreateHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      pattern: IDEMPOTENCY_KEY_PATTERN,
      // No example: a page that fills one in would send the same key for everyone who tries it.
      description: `A client-chosen key, ${IDEMPOTENCY_KEY_RULE}, e.g. a fresh UUID for each new record. A retry with the same key and input within 24 hours stores nothing and gets the first answer again; the same key with other input answers 422.`,
    }),
  ),
});

/** The pattern of an event id (a change version), in `after` and `Last-Event-ID`. */
export const EVENT_ID_PATTERN = '^[0-9]{1,15}$';

/** GET /users/events: where to resume. */
export const EventsQuery = Type.Object(
  {
    after: Type.Optional(
      Type.String({
        pattern: EVENT_ID_PATTERN,
        description: `${cap(RULES.eventId)}: the stream starts with the changes after it. \`Last-Event-ID\` wins over it. Without either, only changes from now on.`,
        examples: ['0'],
        ...integer(0, MAX_ID),
      }),
    ),
  },
  strict,
);

export const EventsHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({
      pattern: EVENT_ID_PATTERN,
      description: `${cap(RULES.eventId)}; browsers' EventSource sends it when they reconnect.`,
    }),
  ),
});
