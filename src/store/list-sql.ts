import { type FieldName, RECORD_FIELDS, TEXT_FIELDS } from '../record/fields.ts';
import { COLUMN } from './columns.ts';
import { fold, type ListFilter, type ListOrder, type SortField, type SortKey } from './store.ts';

export { COLUMN };
const TEXT = new Set<FieldName>(TEXT_FIELDS);
const TIME = new Set<FieldName>(['createdAt', 'updatedAt']);
const OPERATORS = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

/** How a dialect writes what a listing needs; the rest of the SQL is the same for both. */
export interface Dialect {
  /** The placeholder of the n-th value, from 1: `?` or `$n`. */
  param(n: number): string;
  /** A time (ms since the epoch) as the dialect binds it. */
  time(ms: number): unknown;
  /** A text column compared by Unicode code point. */
  byCodePoint(column: string): string;
  /** The condition for records whose folded searched fields contain `text` (already folded). */
  search(text: string, bind: (value: unknown) => string): string;
  /**
   * How an age range is written in a listing in id order. SQLite, without statistics, reads a range
   * of ages by their index and then sorts every match by id (66,000 records for ten ages of a
   * million, for a page of 50); `+age` makes it walk the ids and stop at the page's end, which a
   * range of ages (never narrower than 1 in 151) always makes the cheaper way.
   */
  ageInIdOrder?(column: string): string;
}

/** Values bound to a statement, numbered in the order they are bound. */
export class Binder {
  readonly values: unknown[] = [];
  readonly #dialect: Dialect;

  constructor(dialect: Dialect) {
    this.#dialect = dialect;
  }

  bind = (value: unknown): string => {
    this.values.push(value);
    return this.#dialect.param(this.values.length);
  };
}

/** `%`, `_` and `\` taken literally in a LIKE pattern (with `ESCAPE '\'`). */
export function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (char) => `\\${char}`);
}

/** A field's column as a listing compares it: text by code point. */
export function column(field: FieldName, dialect: Dialect): string {
  return TEXT.has(field) ? dialect.byCodePoint(COLUMN[field]) : COLUMN[field];
}

function sqlValue(field: SortField, value: string | number, dialect: Dialect): unknown {
  return TIME.has(field) ? dialect.time(Number(value)) : value;
}

/** The filter's conditions (exact values, ranges, search, `afterId`), joined by AND. */
export function conditions(filter: ListFilter, dialect: Dialect, b: Binder, inIdOrder = false): string[] {
  const where: string[] = [];
  // Text compared as the indexes sort it, so an exact filter uses the same index as a sort.
  for (const field of RECORD_FIELDS) {
    const value = filter[field];
    if (value !== undefined) where.push(`${column(field, dialect)} = ${b.bind(value)}`);
  }
  for (const range of filter.ranges ?? []) {
    const name =
      inIdOrder && range.field === 'age' && dialect.ageInIdOrder !== undefined
        ? dialect.ageInIdOrder(COLUMN.age)
        : COLUMN[range.field];
    where.push(`${name} ${OPERATORS[range.op]} ${b.bind(sqlValue(range.field, range.value, dialect))}`);
  }
  if (filter.search !== undefined) where.push(dialect.search(fold(filter.search), b.bind));
  if (filter.afterId !== undefined) where.push(`id > ${b.bind(filter.afterId)}`);
  return where;
}

/**
 * Where a sorted page starts: after the last record of the page before. One ascending key is a
 * row comparison, which an index on (key, id) answers directly; one descending key is a range on
 * the key (scanned backwards) refined within the equal values; several keys spell it out in full,
 * behind a range on the first key.
 */
export function keyset(order: ListOrder, dialect: Dialect, b: Binder): string | undefined {
  const after = order.after;
  if (after === undefined) return undefined;
  const keys = order.sort;
  const [first] = keys;
  // Each use binds the value again: positional placeholders (SQLite's `?`) cannot be reused.
  const value = (i: number) => {
    const key = keys[i] as SortKey;
    return b.bind(sqlValue(key.field, after.values[i] as string | number, dialect));
  };
  if (keys.length === 1 && first !== undefined && first.field !== 'id') {
    const col = column(first.field, dialect);
    if (!first.descending) return `(${col}, id) > (${value(0)}, ${b.bind(after.id)})`;
    return `${col} <= ${value(0)} AND (${col} < ${value(0)} OR id > ${b.bind(after.id)})`;
  }
  // The first key's bound, said once more on its own: it lets the first key's index start the scan
  // where the page starts, rather than every page reading the records before it again. Bound first,
  // as it comes first in the text.
  const firstKey = first as SortKey;
  const bound = `${column(firstKey.field, dialect)} ${firstKey.descending ? '<=' : '>='} ${value(0)}`;
  const alternatives: string[] = [];
  keys.forEach((key, i) => {
    const equal = keys.slice(0, i).map((earlier, j) => `${column(earlier.field, dialect)} = ${value(j)}`);
    alternatives.push(
      [...equal, `${column(key.field, dialect)} ${key.descending ? '<' : '>'} ${value(i)}`].join(' AND '),
    );
  });
  if (!keys.some((key) => key.field === 'id')) {
    const equal = keys.map((key, j) => `${column(key.field, dialect)} = ${value(j)}`);
    alternatives.push([...equal, `id > ${b.bind(after.id)}`].join(' AND '));
  }
  return `${bound} AND (${alternatives.map((alternative) => `(${alternative})`).join(' OR ')})`;
}

/** The ORDER BY of a sort: its keys, then the id ascending (unless the id is a key). */
export function orderBy(sort: readonly SortKey[], dialect: Dialect): string {
  const terms = sort.map((key) => `${column(key.field, dialect)} ${key.descending ? 'DESC' : 'ASC'}`);
  if (!sort.some((key) => key.field === 'id')) terms.push('id ASC');
  return terms.join(', ');
}

/** `SELECT <columns> FROM users WHERE ... ORDER BY ... LIMIT ...` for a filter and an order. */
export function listQuery(
  filter: ListFilter,
  order: ListOrder | undefined,
  dialect: Dialect,
  columns: string,
): { text: string; values: unknown[] } {
  const b = new Binder(dialect);
  const inIdOrder = order === undefined || (order.sort.length === 1 && order.sort[0]?.field === 'id');
  const where = conditions(filter, dialect, b, inIdOrder);
  const start = order === undefined ? undefined : keyset(order, dialect, b);
  if (start !== undefined) where.push(`(${start})`);
  const sort = order === undefined ? 'id ASC' : orderBy(order.sort, dialect);
  const limit = filter.limit === undefined ? '' : ` LIMIT ${b.bind(filter.limit)}`;
  const clause = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
  return { text: `SELECT ${columns} FROM users${clause} ORDER BY ${sort}${limit}`, values: b.values };
}

/** `SELECT count(*) FROM users WHERE ...` for a filter (its `afterId` and `limit` do not count). */
export function countQuery(filter: ListFilter, dialect: Dialect): { text: string; values: unknown[] } {
  const b = new Binder(dialect);
  const where = conditions({ ...filter, afterId: undefined, limit: undefined }, dialect, b);
  const clause = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
  return { text: `SELECT count(*) AS count FROM users${clause}`, values: b.values };
}
