/**
 * The one CSV writer (RFC 4180, CRLF line ends): the service's listing as `text/csv`
 * (users/listing-formats.ts), the command line's export and the rows an import rejects (cli/). The
 * reader is the command line's own (cli/csv-records.ts).
 */

import type { FieldName, User } from './fields.ts';

const NEEDS_QUOTES = /[",\r\n]/;
/** A spreadsheet of a locale that separates cells with `;` (or a tab) would split such a cell unquoted. */
const NEEDS_QUOTES_INERT = /[",;\t\r\n]/;
/** How a cell that a spreadsheet reads as a formula starts (OWASP: CSV injection). */
const FORMULA = /^[=+\-@\t\r]/;

/**
 * One CSV record, CRLF-ended; a field is quoted only when it must be. By default the line is inert
 * in a spreadsheet, as OWASP advises against CSV injection: a field that starts like a formula
 * (`=`, `+`, `-`, `@`, a tab or a carriage return) gets a leading single quote, which the
 * spreadsheet shows as text, and one holding a semicolon or a tab is quoted too. `raw` writes the
 * values exactly as given (for a program that reads the file as data).
 */
export function csvLine(fields: readonly string[], options: { raw?: boolean } = {}): string {
  const raw = options.raw === true;
  let line = '';
  for (let i = 0; i < fields.length; i++) {
    let field = fields[i] as string;
    if (i > 0) line += ',';
    if (!raw && FORMULA.test(field)) field = `'${field}`;
    line += (raw ? NEEDS_QUOTES : NEEDS_QUOTES_INERT).test(field) ? `"${field.replaceAll('"', '""')}"` : field;
  }
  return `${line}\r\n`;
}

/** Whether csvLine changes this value when not raw (it starts like a formula). */
export function looksLikeFormula(value: string): boolean {
  return FORMULA.test(value);
}

/** A record's values for a CSV row, as its JSON shows them (whole numbers in digits, times in RFC 3339 UTC). */
export function csvValues(user: User, fields: readonly FieldName[]): string[] {
  return fields.map((field) => {
    const value = user[field];
    return value instanceof Date ? value.toISOString() : String(value);
  });
}
