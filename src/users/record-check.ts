import { Compile } from 'typebox/compile';
import type { FieldError } from '../http/problem.ts';
import { fieldErrors } from '../http/validation.ts';
import type { UserInput } from '../store/store.ts';
import { RECORD_FIELDS, RULES, FullInputQuery } from './schemas.ts';

const check = Compile(FullInputQuery);
const ORDER = Object.keys(FullInputQuery.properties);
const KNOWN = new Set<string>(RECORD_FIELDS);

export type Checked = { ok: true; input: UserInput } | { ok: false; errors: FieldError[] };

/**
 * One record from a file (an import), judged by the rules of `POST /users`: the same schema, the
 * same trimming, the same messages. `age` may be a JSON integer, as in a JSON body.
 */
export function checkRecord(fields: Readonly<Record<string, unknown>>): Checked {
  const value: Record<string, unknown> = {};
  const unknown: FieldError[] = [];
  for (const [name, raw] of Object.entries(fields)) {
    if (!KNOWN.has(name)) {
      unknown.push({ parameter: name, detail: 'is not a field of a record (name, age, city)' });
      continue;
    }
    if (typeof raw === 'string' && name !== 'age') value[name] = raw.trim();
    else if (name === 'age' && typeof raw === 'number' && Number.isSafeInteger(raw)) value[name] = String(raw);
    else value[name] = raw;
  }
  if (unknown.length === 0 && check.Check(value)) {
    const { name, age, city } = value as { name: string; age: string; city: string };
    return { ok: true, input: { name, age: Number(age), city } };
  }
  const errors = check.Check(value) ? [] : fieldErrors(check.Errors(value), value, RULES, ORDER);
  return { ok: false, errors: [...errors, ...unknown] };
}
