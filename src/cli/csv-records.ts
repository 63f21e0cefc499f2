/**
 * The one CSV reader: RFC 4180 records out of text that arrives in chunks: fields separated by commas, records by LF or
 * CRLF, fields in double quotes may hold commas, line breaks and doubled quotes. One scan of the
 * characters, no object per field: reading a large file is dominated by the database, not by this.
 * The writer, which the service's listing shares, is record/csv.ts.
 */

import { LineTooLong, MAX_LINE } from './lines.ts';

/** A record as read: its fields and the line it starts on. */
export interface CsvRecord {
  fields: string[];
  line: number;
}

/** The text is not CSV (a stray or unclosed quote); `line` is where the fault is. */
export class CsvSyntaxError extends Error {
  readonly line: number;

  constructor(line: number, message: string) {
    super(message);
    this.line = line;
  }
}

const COMMA = 44;
const QUOTE = 34;
const LF = 10;
const CR = 13;

/** Reads the records of `text`, a batch per chunk (or more than one chunk, for a record that spans them). */
export async function* csvRecords(text: AsyncIterable<string>): AsyncGenerator<CsvRecord[]> {
  let carry = '';
  let line = 1;
  let first = true;
  for await (let chunk of text) {
    if (first) {
      first = false;
      if (chunk.startsWith('\uFEFF')) chunk = chunk.slice(1);
    }
    const read = scan(carry === '' ? chunk : carry + chunk, line, false);
    carry = read.rest;
    line = read.line;
    if (carry.length > MAX_LINE) throw new LineTooLong(line, 'a record');
    if (read.records.length > 0) yield read.records;
  }
  const read = scan(carry, line, true);
  if (read.records.length > 0) yield read.records;
}

/**
 * The whole records of `buffer`; what is left of an unfinished last record comes back as `rest`
 * (unless `final`, when the end of the text ends it), with `line` where it starts.
 */
function scan(buffer: string, startLine: number, final: boolean): { records: CsvRecord[]; rest: string; line: number } {
  const records: CsvRecord[] = [];
  const end = buffer.length;
  let line = startLine;
  let p = 0;
  record: while (p < end) {
    const recordStart = p;
    const recordLine = line;
    const fields: string[] = [];
    for (;;) {
      let value: string;
      if (buffer.charCodeAt(p) === QUOTE) {
        value = '';
        let from = p + 1;
        for (;;) {
          const close = buffer.indexOf('"', from);
          if (close === -1) {
            if (!final) return { records, rest: buffer.slice(recordStart), line: recordLine };
            throw new CsvSyntaxError(recordLine, 'Quote Not Closed: the text ends inside a quoted field');
          }
          line += countLineBreaks(buffer, from, close);
          value += buffer.slice(from, close);
          if (close + 1 === end && !final) return { records, rest: buffer.slice(recordStart), line: recordLine };
          if (buffer.charCodeAt(close + 1) === QUOTE) {
            value += '"';
            from = close + 2;
            continue;
          }
          p = close + 1;
          break;
        }
        const next = buffer.charCodeAt(p);
        if (next === CR && p + 1 === end && !final)
          return { records, rest: buffer.slice(recordStart), line: recordLine };
        const ends =
          p === end ||
          next === COMMA ||
          next === LF ||
          (next === CR && (p + 1 === end || buffer.charCodeAt(p + 1) === LF));
        if (!ends) {
          throw new CsvSyntaxError(
            line,
            `Invalid Closing Quote: got ${JSON.stringify(buffer[p])} after a closing quote, where a comma or the end of the line belongs`,
          );
        }
      } else {
        let q = p;
        while (q < end) {
          const c = buffer.charCodeAt(q);
          if (c === COMMA || c === LF) break;
          if (c === QUOTE)
            throw new CsvSyntaxError(
              line,
              'Invalid Opening Quote: a quote inside a field that does not start with one',
            );
          q++;
        }
        if (q === end && !final) return { records, rest: buffer.slice(recordStart), line: recordLine };
        // The CR of a CRLF (or of the text's last line) is not part of the field.
        value = buffer.slice(
          p,
          q > p && buffer.charCodeAt(q - 1) === CR && (q === end || buffer.charCodeAt(q) === LF) ? q - 1 : q,
        );
        p = q;
      }
      fields.push(value);
      const c = buffer.charCodeAt(p);
      if (c === COMMA) {
        p++;
        if (p === end && !final) return { records, rest: buffer.slice(recordStart), line: recordLine };
        if (p === end) {
          fields.push('');
          records.push({ fields, line: recordLine });
          return { records, rest: '', line };
        }
        continue;
      }
      // The end of the record: LF, CRLF, or the end of the text.
      if (c === CR) p++;
      if (p < end) {
        p++;
        line++;
      }
      records.push({ fields, line: recordLine });
      continue record;
    }
  }
  return { records, rest: '', line };
}

function countLineBreaks(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = text.indexOf('\n', from); i !== -1 && i < to; i = text.indexOf('\n', i + 1)) n++;
  return n;
}
