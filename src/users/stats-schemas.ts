import { Type } from 'typebox';
import { cap } from '../http/schemas.ts';
import { GROUP_FIELDS, INTEGER_FIELDS, type IntegerFieldName } from '../record/fields.ts';
import { Limit, ListQuery, RULES, shownSchema } from './schemas.ts';

/** The schemas of `GET /users/stats`: its query (the listing's filters, a group, a cap) and its answer. */

/** Groups answered unless `limit` says otherwise; `limit` takes up to the listing's page size. */
export const DEFAULT_GROUPS = 100;

/** The names a whole-number field's summary shows under: `minAge`, `maxAge`, `meanAge`. */
export function summaryNames(field: IntegerFieldName): { min: string; max: string; mean: string } {
  return { min: `min${cap(field)}`, max: `max${cap(field)}`, mean: `mean${cap(field)}` };
}

/** The listing's parameters that pick records (filters, ranges, `q`): not its order, pages or fields. */
const PICKS = new Set(['sort', 'limit', 'after', 'cursor', 'fields']);
const filters = Object.fromEntries(Object.entries(ListQuery.properties).filter(([name]) => !PICKS.has(name)));

const Group = Type.Enum([...GROUP_FIELDS], {
  description: `${cap(RULES.group)}: count the matching records by this field's value, one group per value. Without it, one group of every match.`,
  examples: [GROUP_FIELDS.at(-1)],
});

export const StatsQuery = Type.Object(
  {
    group: Type.Optional(Group),
    ...filters,
    limit: Type.Optional({
      ...Limit,
      description: `${cap(RULES.limit)}: the most groups answered, largest first (default ${DEFAULT_GROUPS}). \`X-Total-Count\` says how many there are in all.`,
    }),
  },
  { additionalProperties: false },
);

const MEAN = 'The mean, as a decimal string rounded to two places (half up), e.g. "36.50".';
const MEAN_PATTERN = '^[0-9]+\\.[0-9]{2}$';

/** One group: its value (as records show it), its count and a summary of each whole-number field. */
export const GroupStatsRecord = Type.Object(
  {
    ...Object.fromEntries(
      GROUP_FIELDS.map((field) => [
        field,
        Type.Optional({ ...shownSchema(field), description: `With \`group=${field}\`: the group's ${field}.` }),
      ]),
    ),
    count: Type.Integer({ minimum: 0, description: 'How many matching records the group holds.' }),
    ...Object.fromEntries(
      INTEGER_FIELDS.flatMap((field) => {
        const names = summaryNames(field);
        const absent = 'Absent when no record matches.';
        return [
          [names.min, Type.Optional(Type.String({ description: `The least ${field}, in decimal digits. ${absent}` }))],
          [
            names.max,
            Type.Optional(Type.String({ description: `The greatest ${field}, in decimal digits. ${absent}` })),
          ],
          [names.mean, Type.Optional(Type.String({ pattern: MEAN_PATTERN, description: `${MEAN} ${absent}` }))],
        ];
      }),
    ),
  },
  { additionalProperties: false, title: 'GroupStats' },
);

export const StatsEnvelope = Type.Object(
  { data: Type.Array(GroupStatsRecord) },
  {
    additionalProperties: false,
    title: 'UserStats',
    description: 'The groups, most records first; ties by value (text by Unicode code point, numbers ascending).',
  },
);

export type StatsQuery = { group?: (typeof GROUP_FIELDS)[number]; limit?: string } & Record<string, string | undefined>;
