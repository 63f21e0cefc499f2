import { type GroupField, INTEGER_FIELDS } from '../record/fields.ts';
import { Binder, COLUMN, column, conditions, type Dialect } from './list-sql.ts';
import type { GroupStats, ListFilter, Stats, Summary } from './store.ts';

/**
 * The SQL of `stats`, the same for both dialects: the listing's conditions, one GROUP BY, and for
 * each whole-number field its least, greatest and summed value (the mean is the API's to round).
 */

/** Each summarized field's aggregates, under names made from its column. */
const AGGREGATES = INTEGER_FIELDS.map((field) => {
  const col = COLUMN[field];
  return `min(${col}) AS min_${col}, max(${col}) AS max_${col}, sum(${col}) AS sum_${col}`;
}).join(', ');

/**
 * `SELECT ... FROM users WHERE ... GROUP BY <group> ORDER BY count DESC, <group> LIMIT n`, with the
 * number of groups in all on every row (a window over the groups: no second read); without a group,
 * one row of every match. Text groups and ties compare by code point, as a listing sorts.
 */
export function statsQuery(
  filter: ListFilter,
  group: GroupField | undefined,
  limit: number,
  dialect: Dialect,
): { text: string; values: unknown[] } {
  const b = new Binder(dialect);
  const where = conditions({ ...filter, afterId: undefined, limit: undefined }, dialect, b);
  const clause = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
  if (group === undefined) return { text: `SELECT count(*) AS n, ${AGGREGATES} FROM users${clause}`, values: b.values };
  const key = column(group, dialect);
  const text =
    `SELECT ${key} AS value, count(*) AS n, ${AGGREGATES}, count(*) OVER () AS groups FROM users${clause}` +
    ` GROUP BY ${key} ORDER BY n DESC, ${key} ASC LIMIT ${b.bind(limit)}`;
  return { text, values: b.values };
}

/** A row of statsQuery as a driver returns it (PostgreSQL gives its bigint counts and sums as text). */
export type StatsRow = Readonly<Record<string, unknown>>;

/** The rows of statsQuery as Stats; for a total, the one row (its count 0 when nothing matches). */
export function toStats(rows: readonly StatsRow[], grouped: boolean): Stats {
  const groups = rows.map((row): GroupStats => {
    const count = Number(row.n);
    const summaries: GroupStats['summaries'] = {};
    if (count > 0) {
      for (const field of INTEGER_FIELDS) {
        const col = COLUMN[field];
        const summary: Summary = {
          min: Number(row[`min_${col}`]),
          max: Number(row[`max_${col}`]),
          sum: Number(row[`sum_${col}`]),
        };
        summaries[field] = summary;
      }
    }
    return grouped ? { value: row.value as string | number, count, summaries } : { count, summaries };
  });
  const total = grouped ? Number(rows[0]?.groups ?? 0) : groups.length;
  return { groups, total };
}
