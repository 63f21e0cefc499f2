import type { FieldError } from '../http/problem.ts';
import { invalidInput } from '../http/validation.ts';
import {
  type ListFilter,
  type ListOrder,
  RANGE_FIELDS,
  RANGE_OPS,
  type Range,
  type SortField,
  type SortKey,
  sortValue,
  type User,
} from '../store/store.ts';
import { FIELDS, type FieldSpec } from '../record/fields.ts';
import { someValuesOf } from '../record/rules.ts';
import type { ListQuery } from './schemas.ts';

/** A listing request as the store takes it: what matches, in which order, from where, how many. */
export interface Listing {
  filter: ListFilter;
  /** Undefined: creation order. */
  order: ListOrder | undefined;
  /** The `sort` parameter as given, which a cursor must match. */
  sortText: string | undefined;
}

const TIME_FIELDS = new Set(['createdAt', 'updatedAt']);
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

/**
 * An RFC 3339 date and time in whole ms since the epoch (rounded down), and whether it had a part
 * finer than a ms; undefined when it names no moment (February 30th, 25:00).
 */
export function parseInstant(text: string): { ms: number; finer: boolean } | undefined {
  const parts = RFC3339.exec(text);
  if (parts === null) return undefined;
  const [year, month, day, hour, minute, second] = parts.slice(1, 7).map(Number) as number[];
  const daysInMonth = new Date(Date.UTC(year as number, month as number, 0)).getUTCDate();
  const [offsetHours, offsetMinutes] = [Number(parts[9] ?? 0), Number(parts[10] ?? 0)];
  if (
    (month as number) < 1 ||
    (month as number) > 12 ||
    (day as number) < 1 ||
    (day as number) > daysInMonth ||
    (hour as number) > 23 ||
    (minute as number) > 59 ||
    (second as number) > 59 ||
    offsetHours > 23 ||
    offsetMinutes > 59
  ) {
    return undefined;
  }
  // The fraction's digits as written, so that no binary rounding moves a bound across a ms.
  const digits = (parts[7] ?? '.').slice(1);
  const fraction = Number(digits.slice(0, 3).padEnd(3, '0'));
  const offset = (parts[8] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  const ms = Date.UTC(year as number, (month as number) - 1, day, hour, minute, second, fraction) - offset;
  return { ms, finer: /[1-9]/.test(digits.slice(3)) };
}

/**
 * A time bound in the ms that records carry: a bound between two ms keeps exactly the records it
 * names (`gte` 10.5 ms is `gte` 11, `lte` 10.5 is `lte` 10; `gt` and `lt` likewise).
 */
function timeBound(text: string, op: Range['op']): number {
  const instant = parseInstant(text);
  if (instant === undefined) return Number.NaN;
  return instant.finer && (op === 'gte' || op === 'lt') ? instant.ms + 1 : instant.ms;
}

/** `age,-name` as sort keys; a field named twice is a fault. */
function parseSort(text: string, faults: FieldError[]): SortKey[] {
  const keys = text.split(',').map((part) => ({
    field: part.replace(/^-/, '') as SortField,
    descending: part.startsWith('-'),
  }));
  if (new Set(keys.map((key) => key.field)).size !== keys.length) {
    faults.push({ parameter: 'sort', detail: 'must name each field at most once' });
  }
  return keys;
}

/**
 * The cursor of the next page: opaque to clients, it holds the sort it belongs to and the last
 * record's sort values and id.
 */
export function encodeCursor(sortText: string, sort: readonly SortKey[], last: User): string {
  const position = { s: sortText, v: sort.map((key) => sortValue(last, key.field)), i: last.id };
  return Buffer.from(JSON.stringify(position)).toString('base64url');
}

/** C0 and C1 control characters, by their Unicode category. */
const CONTROL = /\p{Cc}/u;
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** The latest time a record can carry: the end of year 9999, in ms since the epoch. */
const LAST_TIME = 253_402_300_799_999;

/** Whether a cursor's value can be one of `field`'s: the cursors the service makes always are. */
function fieldValue(field: SortField, value: unknown): boolean {
  switch (field) {
    case 'id':
      return Number.isSafeInteger(value) && (value as number) >= 1;
    case 'createdAt':
    case 'updatedAt':
      return Number.isSafeInteger(value) && (value as number) >= 0 && (value as number) <= LAST_TIME;
  }
  const spec: FieldSpec = FIELDS[field];
  if (spec.kind === 'integer') {
    return Number.isInteger(value) && (value as number) >= spec.min && (value as number) <= spec.max;
  }
  // Text a record can hold: no control characters (PostgreSQL refuses a NUL) and no lone surrogate.
  return typeof value === 'string' && value.length <= 1000 && !CONTROL.test(value) && !LONE_SURROGATE.test(value);
}

function decodeCursor(text: string, sortText: string, sort: readonly SortKey[]): ListOrder['after'] | undefined {
  try {
    const position = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown;
    if (typeof position !== 'object' || position === null || Array.isArray(position)) return undefined;
    const { s, v: values, i: id, ...rest } = position as { s?: unknown; v?: unknown; i?: unknown };
    if (
      Object.keys(rest).length > 0 ||
      s !== sortText ||
      !Array.isArray(values) ||
      values.length !== sort.length ||
      !fieldValue('id', id) ||
      !values.every((value, i) => fieldValue((sort[i] as SortKey).field, value))
    ) {
      return undefined;
    }
    return { values: values as Array<string | number>, id: id as number };
  } catch {
    return undefined;
  }
}

/**
 * The listing a validated query asks for. Faults the schema cannot see (a field sorted twice, a
 * date that does not exist, a cursor of another sort, `after` with a sort) are reported together.
 */
export function parseListing(query: ListQuery): Listing {
  const faults: FieldError[] = [];
  const ranges: Range[] = [];
  for (const field of RANGE_FIELDS) {
    for (const op of RANGE_OPS) {
      const parameter = `${field}.${op}`;
      const text = query[parameter];
      if (text === undefined) continue;
      const value = TIME_FIELDS.has(field) ? timeBound(text, op) : Number(text);
      if (Number.isNaN(value)) faults.push({ parameter, detail: 'must be a date and time that exists' });
      else ranges.push({ field, op, value });
    }
  }
  const filter: ListFilter = {
    ...someValuesOf(query),
    ranges: ranges.length > 0 ? ranges : undefined,
    search: query.q,
    afterId: query.after === undefined ? undefined : Number(query.after),
  };
  let order: ListOrder | undefined;
  if (query.sort !== undefined) {
    order = { sort: parseSort(query.sort, faults) };
    if (query.after !== undefined) {
      faults.push({
        parameter: 'after',
        detail: 'pages in creation order only; with sort, follow the cursor of the Link',
      });
    }
    if (query.cursor !== undefined) {
      order.after = decodeCursor(query.cursor, query.sort, order.sort);
      if (order.after === undefined) {
        faults.push({ parameter: 'cursor', detail: 'is not a cursor of this sort; start again without it' });
      }
    }
  } else if (query.cursor !== undefined) {
    faults.push({ parameter: 'cursor', detail: 'goes with the sort it came with' });
  }
  if (faults.length > 0) throw invalidInput(faults);
  return { filter, order, sortText: query.sort };
}

/** `count=exact`, `count = exact` or `count="exact"`: a preference as RFC 7240 writes it. */
const COUNT_EXACT = /^count\s*=\s*(?:exact|"exact")$/i;

/** Whether the request asked for the total count (`Prefer: count=exact`, RFC 7240). */
export function wantsCount(prefer: string | string[] | undefined): boolean {
  if (prefer === undefined) return false;
  const text = Array.isArray(prefer) ? prefer.join(',') : prefer;
  return text.split(',').some((preference) => COUNT_EXACT.test(preference.split(';')[0]?.trim() ?? ''));
}
