import {
  FIELDS,
  type FieldName,
  RECORD_FIELDS,
  type RecordValues,
  SEARCH_FIELDS,
  type User,
} from '../record/fields.ts';
import { fold } from './store.ts';

/**
 * The users table's columns, from the record's definition, for both dialects: what every
 * statement that reads or writes a whole record lists, made once at load.
 */

/** The column of each field the API names. */
export const COLUMN: Readonly<Record<FieldName, string>> = {
  id: 'id',
  ...(Object.fromEntries(RECORD_FIELDS.map((field) => [field, FIELDS[field].column])) as Record<string, string>),
  createdAt: 'created_at',
  updatedAt: 'updated_at',
} as Record<FieldName, string>;

/** The record's own columns, in the definition's order. */
export const RECORD_COLUMNS: readonly string[] = RECORD_FIELDS.map((field) => FIELDS[field].column);

/** The folded copies `q` searches (fold()), one per searchable field. */
export const FOLDED_COLUMNS: readonly string[] = SEARCH_FIELDS.map((field) => `${FIELDS[field].column}_folded`);

/** What a write of a record's values sets: its own columns, then the folded copies. */
export const WRITTEN_COLUMNS: readonly string[] = [...RECORD_COLUMNS, ...FOLDED_COLUMNS];

/** The values of WRITTEN_COLUMNS for a record's values. */
export function writtenValues(values: RecordValues): unknown[] {
  const row: unknown[] = RECORD_FIELDS.map((field) => values[field]);
  for (const field of SEARCH_FIELDS) row.push(fold(values[field]));
  return row;
}

/** Everything kept of a record, in the order of a backup line: id, its own columns, times, version. */
export const USER_COLUMNS: readonly string[] = ['id', ...RECORD_COLUMNS, 'created_at', 'updated_at', 'version'];

/** A change log row's columns: the change's, then the record's as it was (its version as record_version). */
export const CHANGE_COLUMNS: readonly string[] = [
  'version',
  'kind',
  'id',
  ...RECORD_COLUMNS,
  'created_at',
  'updated_at',
  'record_version',
  'at',
];

/**
 * What an update's log row keeps of the record as it was before (migration 10): its own columns and
 * its updatedAt (the id and createdAt do not change; its version was one less). NULL for a creation
 * or a deletion, and for an update logged before migration 10.
 */
export const BEFORE_COLUMNS: readonly string[] = [...RECORD_COLUMNS, 'updated_at'].map((column) => `before_${column}`);

/** The values of BEFORE_COLUMNS for a change's `before` (all NULL without one), times as `time` writes them. */
export function beforeValues(before: User | undefined, time: (date: Date) => unknown): unknown[] {
  if (before === undefined) return BEFORE_COLUMNS.map(() => null);
  return [...RECORD_FIELDS.map((field) => before[field]), time(before.updatedAt)];
}

/** An update's record as it was, from its log row and the record after it; undefined where the row keeps none. */
export function beforeOf(row: UserRow, after: User, time: (value: unknown) => Date): User | undefined {
  const updatedAt = row.before_updated_at;
  if (updatedAt === null || updatedAt === undefined) return undefined;
  const values = Object.fromEntries(RECORD_FIELDS.map((field) => [field, row[`before_${FIELDS[field].column}`]]));
  return { ...after, ...values, updatedAt: time(updatedAt), version: after.version - 1 };
}

/** `?, ?, ?` for n values (SQLite). */
export function placeholders(n: number): string {
  return Array.from({ length: n }, () => '?').join(', ');
}

/** A users row as a driver returns it, by column name. */
export type UserRow = Readonly<Record<string, unknown>>;

/** Names that may be written into the mapper's source: identifiers, as every field and column is. */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The mapper from a dialect's users row to a User, made once per dialect: `id` and `time` convert
 * what the driver gives for an id and a time; the record's own values come as stored. It is written
 * as one object literal from the definition (so every User has the same shape, as a hand-written
 * mapper gives): a loop that adds the fields one by one took more than twice as long per row, and
 * a listing maps a thousand rows a page.
 */
export function userReader(convert: {
  id(value: unknown): number;
  time(value: unknown): Date;
}): (row: UserRow) => User {
  const own = RECORD_FIELDS.map((field) => {
    const column = FIELDS[field].column;
    if (!IDENTIFIER.test(field) || !IDENTIFIER.test(column)) throw new Error(`${field}: not a name for a column`);
    return `${field}: row.${column}`;
  });
  const literal = `{ id: convert.id(row.id), ${own.join(', ')}, createdAt: convert.time(row.created_at), updatedAt: convert.time(row.updated_at), version: row.version }`;
  // Source made above from the definition's names only (identifiers, checked).
  return new Function('convert', `return (row) => (${literal});`)(convert) as (row: UserRow) => User;
}
