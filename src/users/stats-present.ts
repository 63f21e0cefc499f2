import { type GroupField, INTEGER_FIELDS } from '../record/fields.ts';
import type { Stats } from '../store/store.ts';
import { summaryNames } from './stats-schemas.ts';

/**
 * A mean as a decimal string to two places, half up, from the exact sum and count: the same on both
 * databases whatever their division does (`36.505` is never `36.50` by a binary fraction).
 */
export function meanText(sum: number, count: number): string {
  const hundredths = (BigInt(sum) * 200n + BigInt(count)) / (2n * BigInt(count));
  return `${hundredths / 100n}.${String(hundredths % 100n).padStart(2, '0')}`;
}

/**
 * The answer's body, `{"data":[...]}`: each group's value as a record shows it (a whole number as
 * decimal digits), its count as a number, then each whole-number field's least, greatest and mean.
 */
export function statsJson(stats: Stats, group: GroupField | undefined): string {
  const data = stats.groups.map((entry) => {
    const shown: Record<string, string | number> = {};
    if (group !== undefined) shown[group] = String(entry.value);
    shown.count = entry.count;
    for (const field of INTEGER_FIELDS) {
      const summary = entry.summaries[field];
      if (summary === undefined) continue;
      const names = summaryNames(field);
      shown[names.min] = String(summary.min);
      shown[names.max] = String(summary.max);
      shown[names.mean] = meanText(summary.sum, entry.count);
    }
    return shown;
  });
  return JSON.stringify({ data });
}
