/**
 * The one definition of a record: each of its own fields (what a client sends and reads), with its
 * type, column, input rule and what a listing may do with it. The API's schemas and types, the SQL
 * of both databases, the command line's checks, the backup and CSV columns, the events and the
 * OpenAPI document derive from this table; adding a field is a row here and a migration per
 * database. Beside them every record has an id, a version and two times, kept by the service.
 */

/** Text: trimmed, from `min` to `max` code points, one of them visible (the rule in text-rule.ts). */
interface TextField {
  kind: 'text';
  min: number;
  max: number;
}

/** A whole number from `min` to `max`, sent and shown as decimal digits (a JSON body may send a number). */
interface IntegerField {
  kind: 'integer';
  min: number;
  max: number;
  /** The same range as a pattern of decimal digits, leading zeros allowed (the schema checks text). */
  pattern: string;
  /** PostgreSQL's type for it. */
  pgType: 'smallint' | 'integer';
}

export type FieldSpec = (TextField | IntegerField) & {
  /** Its column in both databases. */
  column: string;
  /** A value for the documentation of the input, and one for the example event. */
  example: string;
  eventExample: string;
  /** Shown in a record without `fields`. */
  shown: boolean;
  /** A listing may sort by it (`sort`); its index is the migration's. */
  sortable: boolean;
  /** A listing may take a range of it (`age.gte`...). */
  rangeable: boolean;
  /** `q` looks in it: a folded copy (`<column>_folded`) is kept beside it, and a trigram index. */
  searchable: boolean;
  /** `GET /users/stats` may count records by it (`group`): a value shared by many records. */
  groupable: boolean;
};

const TEXT = { kind: 'text', min: 1, max: 200 } as const;

export const FIELDS = {
  name: {
    ...TEXT,
    column: 'name',
    example: 'Alice',
    eventExample: 'Ada',
    shown: true,
    sortable: true,
    rangeable: false,
    searchable: true,
    groupable: false,
  },
  age: {
    kind: 'integer',
    min: 0,
    max: 150,
    pattern: '^0*(?:[0-9]|[1-9][0-9]|1[0-4][0-9]|150)$',
    pgType: 'smallint',
    column: 'age',
    example: '30',
    eventExample: '36',
    shown: true,
    sortable: true,
    rangeable: true,
    searchable: false,
    groupable: true,
  },
  city: {
    ...TEXT,
    column: 'city',
    example: 'Paris',
    eventExample: 'London',
    shown: true,
    sortable: true,
    rangeable: false,
    searchable: true,
    groupable: true,
  },
} as const satisfies Record<string, FieldSpec>;

type Fields = typeof FIELDS;

/** A field of the record's own: one a client sends. */
export type RecordField = keyof Fields;

/** The value of a field as stored: text, or a number. */
export type ValueOf<F extends RecordField> = Fields[F]['kind'] extends 'text' ? string : number;

/** The record's own values: what a create takes, a full replace sets, a backup line holds besides the rest. */
export type RecordValues = { [F in RecordField]: ValueOf<F> };

/** The record's own fields, in their order (the order of every list, column and line below). */
export const RECORD_FIELDS = Object.keys(FIELDS) as readonly RecordField[];

/** Every field the API can show, in the order it shows them: the id, the record's own, the times. */
export const ALL_FIELDS: readonly FieldName[] = ['id', ...RECORD_FIELDS, 'createdAt', 'updatedAt'];
export type FieldName = 'id' | RecordField | 'createdAt' | 'updatedAt';

type Flagged<Flag extends 'sortable' | 'rangeable' | 'searchable' | 'groupable'> = {
  [F in RecordField]: Fields[F][Flag] extends true ? F : never;
}[RecordField];

/** The fields a listing can be sorted by; text sorts by Unicode code point. */
export const SORT_FIELDS = ALL_FIELDS.filter(
  (field) => !isRecordField(field) || FIELDS[field].sortable,
) as readonly SortField[];
export type SortField = 'id' | Flagged<'sortable'> | 'createdAt' | 'updatedAt';

/** The fields a listing can take a range of. */
export const RANGE_FIELDS = ALL_FIELDS.filter(
  (field) => !isRecordField(field) || FIELDS[field].rangeable,
) as readonly RangeField[];
export type RangeField = 'id' | Flagged<'rangeable'> | 'createdAt' | 'updatedAt';

/** The fields `q` looks in. */
export const SEARCH_FIELDS = RECORD_FIELDS.filter((field) => FIELDS[field].searchable) as readonly SearchField[];
export type SearchField = Flagged<'searchable'>;

/** The fields `GET /users/stats` can group by. */
export const GROUP_FIELDS = RECORD_FIELDS.filter((field) => FIELDS[field].groupable) as readonly GroupField[];
export type GroupField = Flagged<'groupable'>;

/** What a record shows without `fields`. */
export const DEFAULT_FIELDS: readonly FieldName[] = RECORD_FIELDS.filter((field) => FIELDS[field].shown);

/** The fields an event (and a webhook's body) shows of the record: its id and its own. */
export const EVENT_FIELDS: readonly FieldName[] = ['id', ...RECORD_FIELDS];

/** The fields kept as text, and as whole numbers. */
export const TEXT_FIELDS = RECORD_FIELDS.filter((field) => FIELDS[field].kind === 'text') as readonly RecordField[];
export const INTEGER_FIELDS = RECORD_FIELDS.filter(
  (field) => FIELDS[field].kind === 'integer',
) as readonly IntegerFieldName[];
export type IntegerFieldName = { [F in RecordField]: Fields[F]['kind'] extends 'integer' ? F : never }[RecordField];

export function isRecordField(name: string): name is RecordField {
  return Object.hasOwn(FIELDS, name);
}

/** `name, age and city` (or `or`): a list of fields in a sentence. */
export function fieldList(fields: readonly string[], conjunction: 'and' | 'or'): string {
  return fields.length < 2 ? fields.join('') : `${fields.slice(0, -1).join(', ')} ${conjunction} ${fields.at(-1)}`;
}

/** A stored user as the storage layer hands it over: typed, camelCase, independent of the API. */
export interface User extends RecordValues {
  id: number;
  createdAt: Date;
  updatedAt: Date;
  /** Starts at 1 and grows by one on every change (a restore sets it back to the backup's). */
  version: number;
}
