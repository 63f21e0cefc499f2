import { FIELDS, type RecordField, type RecordValues, RECORD_FIELDS } from './fields.ts';

/**
 * The input rule of a record, once: how a value sent is brought into shape before it is checked,
 * what each field must be (in words, for error details and the documentation) and the text pattern.
 * Every way in (query string, JSON and form bodies, an import, a restore) goes through these.
 */

/** What a field must be, in words. */
export function ruleOf(field: RecordField): string {
  const spec = FIELDS[field];
  return spec.kind === 'text'
    ? `text of ${spec.min} to ${spec.max} characters with a visible one among them, and no control, text-direction or noncharacter code points`
    : `a whole number from ${spec.min} to ${spec.max}, in decimal digits`;
}

// Text a person can read back: at least one letter, digit, punctuation mark or symbol (so no name
// of only spaces or zero-width characters), and none of: C0/C1 control characters, lone surrogates
// (the `u` flag makes a paired surrogate one code point, so only unpaired halves fall in the
// range), the marks and overrides that reorder text (U+061C, U+200E-F, U+202A-E, U+2066-9), or
// Unicode noncharacters. Lengths count code points.
const FORBIDDEN =
  '\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u202A-\\u202E\\u2066-\\u2069\\uD800-\\uDFFF\\uFDD0-\\uFDEF\\uFFFE\\uFFFF' +
  Array.from(
    { length: 16 },
    (_, plane) => `\\u{${(plane + 1).toString(16)}FFFE}\\u{${(plane + 1).toString(16)}FFFF}`,
  ).join('');
export const TEXT_PATTERN = `^(?=.*[\\p{L}\\p{N}\\p{P}\\p{S}])[^${FORBIDDEN}]*$`;

/**
 * The same rule as the document shows it, for tools that read patterns without Unicode classes
 * (Swagger UI's form checks, generated clients): a character that is not white space, an
 * invisible format or filler character, or private use among them, and none of the forbidden ones
 * of the Basic Multilingual Plane. The service's check, by Unicode category, also refuses names of
 * only combining marks or unassigned code points, and the noncharacters and invisible characters
 * beyond U+FFFF, which such a pattern cannot name.
 */
export const DOCUMENTED_TEXT_PATTERN =
  '^(?=.*[^\\s\\u00AD\\u034F\\u115F\\u1160\\u17B4\\u17B5\\u180B-\\u180F\\u200B-\\u200F\\u2028-\\u202F\\u205F-\\u206F\\u3164\\uE000-\\uF8FF\\uFE00-\\uFE0F\\uFEFF\\uFFA0\\uFFF0-\\uFFFB])[^\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u202A-\\u202E\\u2066-\\u2069\\uFDD0-\\uFDEF\\uFFFE\\uFFFF]*$';

/**
 * A value as sent, in the form the schema checks: text trimmed, a JSON whole number as its decimal
 * digits; anything else as it came (the schema refuses it).
 */
export function normalizeValue(field: RecordField, value: unknown): unknown {
  if (FIELDS[field].kind === 'text') return typeof value === 'string' ? value.trim() : value;
  return typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : value;
}

/** A checked value as the API sends it (decimal digits for a number) to the value stored. */
export function storedValue<F extends RecordField>(field: F, text: string): RecordValues[F] {
  return (FIELDS[field].kind === 'integer' ? Number(text) : text) as RecordValues[F];
}

/** The record's values from checked input in the API's form (every field given). */
export function valuesOf(input: Readonly<Record<RecordField, string>>): RecordValues {
  const values: Partial<Record<RecordField, unknown>> = {};
  for (const field of RECORD_FIELDS) values[field] = storedValue(field, input[field]);
  return values as RecordValues;
}

/** The values given, of checked input in the API's form (a PATCH, a filter). */
export function someValuesOf(input: Readonly<Partial<Record<RecordField, string>>>): Partial<RecordValues> {
  const values: Partial<Record<RecordField, unknown>> = {};
  for (const field of RECORD_FIELDS) {
    const text = input[field];
    if (text !== undefined) values[field] = storedValue(field, text);
  }
  return values as Partial<RecordValues>;
}
