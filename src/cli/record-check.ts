import { Compile } from 'typebox/compile';
import type { FieldError } from '../http/problem.ts';
import { fieldErrors } from '../http/validation.ts';
import { isRecordField, RECORD_FIELDS, type RecordField } from '../record/fields.ts';
import { normalizeValue, valuesOf } from '../record/rules.ts';
import type { UserInput } from '../store/store.ts';
import { FullInputQuery, RULES } from '../users/schemas.ts';

const check = Compile(FullInputQuery);
const ORDER = Object.keys(FullInputQuery.properties);
const NOT_A_FIELD = `is not a field of a record (${RECORD_FIELDS.join(', ')})`;

export type Checked = { ok: true; input: UserInput } | { ok: false; errors: FieldError[] };

/**
 * One record from a file (an import, a restore), judged by the rules of `POST /users`: the same
 * schema, the same input rule (trimming; a whole number may be a JSON number, as in a JSON body),
 * the same messages.
 */
export function checkRecord(fields: Readonly<Record<string, unknown>>): Checked {
  const value: Record<string, unknown> = {};
  const unknown: FieldError[] = [];
  for (const [name, raw] of Object.entries(fields)) {
    if (isRecordField(name)) value[name] = normalizeValue(name, raw);
    else unknown.push({ parameter: name, detail: NOT_A_FIELD });
  }
  if (unknown.length === 0 && check.Check(value)) {
    return { ok: true, input: valuesOf(value as Record<RecordField, string>) };
  }
  const errors = check.Check(value) ? [] : fieldErrors(check.Errors(value), value, RULES, ORDER);
  return { ok: false, errors: [...errors, ...unknown] };
}
