import { type Static, type TOptional, type TSchema, type TString, Type } from 'typebox';
import { cap, integer } from '../http/schemas.ts';
import {
  ALL_FIELDS,
  DEFAULT_FIELDS,
  FIELDS,
  fieldList,
  GROUP_FIELDS,
  RANGE_FIELDS,
  RECORD_FIELDS,
  type RecordField,
  SEARCH_FIELDS,
  SORT_FIELDS,
} from '../record/fields.ts';
import { DOCUMENTED_TEXT_PATTERN, ruleOf, TEXT_PATTERN } from '../record/rules.ts';
import { MAX_ID } from '../store/store.ts';
import { IDEMPOTENCY_KEY_PATTERN, IDEMPOTENCY_KEY_RULE } from './idempotency.ts';

/**
 * The schemas of the users API. Each one validates requests, types the handlers and is published
 * in the OpenAPI document, so the rules below are the whole truth about what the service accepts.
 */

/** Something for each of the record's own fields, keyed by field. */
type Each<T> = { [F in RecordField]: T };
const each = <T>(make: (field: RecordField) => T): Each<T> =>
  Object.fromEntries(RECORD_FIELDS.map((field) => [field, make(field)])) as Each<T>;

const ID_RULE = 'a whole number (an id)';
const TIME_RULE = 'an RFC 3339 date and time, such as 2026-01-31T12:00:00Z';

/** `age.gte` and the other bounds: each must be what its field is (an id, a date and time). */
function boundRules(): Record<string, string> {
  const rules: Record<string, string> = {};
  for (const field of RANGE_FIELDS) {
    const rule = field === 'id' ? ID_RULE : field === 'createdAt' || field === 'updatedAt' ? TIME_RULE : ruleOf(field);
    for (const op of ['gt', 'gte', 'lt', 'lte']) rules[`${field}.${op}`] = rule;
  }
  return rules;
}

/** What each parameter must be; used both in the OpenAPI descriptions and in error details. */
export const RULES = {
  ...boundRules(),
  ...each(ruleOf),
  fields: `a comma-separated list of: ${ALL_FIELDS.join(', ')}`,
  limit: 'a whole number from 1 to 1000',
  after: 'a whole number (the id of the last record of the previous page)',
  sort: `a comma-separated list of fields to sort by (${SORT_FIELDS.join(', ')}), each at most once, a leading - for descending`,
  q: 'text of 1 to 200 characters with no control characters',
  group: `one of: ${GROUP_FIELDS.join(', ')}`,
  cursor: 'the cursor of a Link to the next page, as given',
  id: ID_RULE,
  time: TIME_RULE,
} as const;

const FIELD_ALTERNATIVES = `(?:${ALL_FIELDS.join('|')})`;

/** The query string's form of each of the record's own fields (every value is text there). */
function inputSchema(field: RecordField): TString {
  const spec = FIELDS[field];
  if (spec.kind === 'text') {
    return Type.String({
      minLength: spec.min,
      maxLength: spec.max,
      pattern: TEXT_PATTERN,
      description: `${cap(ruleOf(field))}. Surrounding white space is trimmed before the check.`,
      examples: [spec.example],
      'x-document-as': { type: 'string', minLength: spec.min, maxLength: spec.max, pattern: DOCUMENTED_TEXT_PATTERN },
    });
  }
  return Type.String({
    pattern: spec.pattern,
    description: `${cap(ruleOf(field))}. Stored as an integer and returned as a decimal string.`,
    examples: [spec.example],
    ...integer(spec.min, spec.max),
  });
}

const INPUT = each(inputSchema);
const OPTIONAL_INPUT: Each<TOptional<TString>> = each((field) => Type.Optional(INPUT[field]));

const Fields = Type.String({
  pattern: `^${FIELD_ALTERNATIVES}(?:,${FIELD_ALTERNATIVES})*$`,
  description: `${cap(RULES.fields)}. Default: ${DEFAULT_FIELDS.join(',')}. Keys come out in the order listed here.`,
  examples: [['id', ...DEFAULT_FIELDS].join(',')],
});
export const Limit = Type.String({
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

/** How the API shows each of the record's own fields. */
export function shownSchema(field: RecordField): TSchema {
  const spec = FIELDS[field];
  return spec.kind === 'text' ? Type.String() : Type.String({ description: `Decimal digits, e.g. "${spec.example}".` });
}

/** A record as the API shows it: its default fields, more with `fields`. */
export const UserRecord = Type.Object(
  {
    id: Type.Optional(Type.Integer({ minimum: 1, description: 'Server-assigned, never reused.' })),
    ...each((field) => Type.Optional(shownSchema(field))),
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

const SORT_FIELD = `-?(?:${SORT_FIELDS.join('|')})`;
const Sort = Type.String({
  pattern: `^${SORT_FIELD}(?:,${SORT_FIELD}){0,${SORT_FIELDS.length - 1}}$`,
  description: `${cap(RULES.sort)}. Ties are broken by id, ascending; text sorts by Unicode code point. Without it: creation order. With \`limit\`, the \`Link\` to the next page carries a \`cursor\`.`,
  examples: ['age,-name'],
});
const Search = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: '^[^\\u0000-\\u001F\\u007F-\\u009F]*$',
  description: `${cap(RULES.q)}: records whose ${fieldList(SEARCH_FIELDS, 'or')} contains it, ignoring case (Unicode case folding: ß matches ss, ς matches σ) and composed (NFC). From 3 characters an index finds them; shorter text is looked for record by record.`,
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
/** A bound of a whole-number field: its own rule, without the words on how it is stored. */
function integerBound(field: RecordField): TSchema {
  const spec = FIELDS[field];
  if (spec.kind !== 'integer') throw new Error(`${field} is not a whole number: it cannot be a range`);
  return Type.String({
    pattern: spec.pattern,
    description: `${cap(ruleOf(field))}.`,
    examples: [spec.example],
    ...integer(spec.min, spec.max),
  });
}
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

/**
 * `age.gt` ... `updatedAt.lte`: one optional bound of each kind on each range field, the record's
 * own fields first, then the id and the times.
 */
function rangeParameters() {
  const bounds: Record<string, TSchema> = {};
  for (const field of RANGE_FIELDS) {
    if (field !== 'id' && field !== 'createdAt' && field !== 'updatedAt') bounds[field] = integerBound(field);
  }
  const fields = { ...bounds, id: IdBound, createdAt: TimeBound, updatedAt: TimeBound };
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
    ...OPTIONAL_INPUT,
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

/** POST and PUT: every field. They may come in the query string or in a body, not both. */
export const FullInputQuery = Type.Object({ ...INPUT, fields: Type.Optional(Fields) }, strict);

/** One record of a batch create: its fields, all required, nothing else. */
export const RecordInput = Type.Object(INPUT, strict);

/** PATCH: at least one of the fields. */
export const PatchInputQuery = Type.Object(
  {
    ...OPTIONAL_INPUT,
    fields: Type.Optional(Fields),
  },
  {
    ...strict,
    anyOf: RECORD_FIELDS.map((field) => ({ required: [field] })),
  },
);

export const FieldsQuery = Type.Object({ fields: Type.Optional(Fields) }, strict);

/** A field in a body: as in the query string, and a whole number may be a JSON number. */
function bodySchema(field: RecordField): TSchema {
  const spec = FIELDS[field];
  return spec.kind === 'text'
    ? INPUT[field]
    : Type.Union([INPUT[field], Type.Integer({ minimum: spec.min, maximum: spec.max })], {
        description: `${cap(ruleOf(field))}; in JSON a number is accepted too.`,
      });
}

/** The body forms of the input, documented for JSON and form bodies. */
export const InputBody = Type.Object(
  each((field) => Type.Optional(bodySchema(field))),
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
