import { RECORD_FIELDS, SEARCH_FIELDS } from '../record/fields.ts';
import { fold, type ListFilter, type RangeOp, sortValue, type User } from './store.ts';

const COMPARE: Readonly<Record<RangeOp, (value: number, bound: number) => boolean>> = {
  gt: (value, bound) => value > bound,
  gte: (value, bound) => value >= bound,
  lt: (value, bound) => value < bound,
  lte: (value, bound) => value <= bound,
};

/**
 * Each record's searched fields folded, once per record object however many filters ask: a change
 * handed to a thousand filtered streams is folded once, not a thousand times.
 */
const foldedFields = new WeakMap<User, readonly string[]>();

function folded(user: User): readonly string[] {
  let values = foldedFields.get(user);
  if (values === undefined) {
    values = SEARCH_FIELDS.map((field) => fold(user[field]));
    foldedFields.set(user, values);
  }
  return values;
}

/**
 * Whether a record is one a listing with this filter returns, decided in memory: the twin of the
 * listing's SQL conditions (list-sql.ts `conditions`), case for case. Exact values compare as the
 * SQL does (text by code point, so as strings), ranges compare the sort value (times in ms, as
 * both stores keep them), and the search looks for the folded text in the folded searched fields
 * (store.ts `fold`, the function that fills the `_folded` columns). `afterId` and `limit` page a
 * listing and are not asked here.
 */
export function listMatcher(filter: ListFilter): (user: User) => boolean {
  const values = RECORD_FIELDS.filter((field) => filter[field] !== undefined);
  const ranges = filter.ranges ?? [];
  const search = filter.search === undefined ? undefined : fold(filter.search);
  return (user) =>
    values.every((field) => user[field] === filter[field]) &&
    ranges.every((range) => COMPARE[range.op](sortValue(user, range.field) as number, range.value)) &&
    (search === undefined || folded(user).some((value) => value.includes(search)));
}
