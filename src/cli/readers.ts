import type { Writable } from 'node:stream';
import { CsvSyntaxError, csvRecords } from './csv-records.ts';
import { csvLine } from '../record/csv.ts';
import { LineTooLong, MAX_LINE } from './lines.ts';
import { fieldList, RECORD_FIELDS } from '../record/fields.ts';

/** The formats a file of records may be in. */
export const FORMATS = ['csv', 'json', 'ndjson'] as const;
export type Format = (typeof FORMATS)[number];

/** The format a file's name says, or undefined. */
export function formatOfName(file: string): Format | undefined {
  const extension = /\.([a-z]+)$/i.exec(file)?.[1]?.toLowerCase();
  if (extension === 'csv') return 'csv';
  if (extension === 'json') return 'json';
  if (extension === 'ndjson' || extension === 'jsonl') return 'ndjson';
  return undefined;
}

/** One row of the file: its line, its fields when it is an object at all, and its text for a rejects file. */
export interface Row {
  line: number;
  fields: Record<string, unknown> | undefined;
  /** Why the row is not a record at all (not a JSON object, a wrong number of CSV fields). */
  fault?: string;
  raw: string | string[];
}

/** The file cannot be read as a whole (a malformed quote, invalid UTF-8, a broken JSON array). */
export class FileFault extends Error {
  readonly line: number;

  constructor(line: number, message: string) {
    super(message);
    this.line = line;
  }
}

/** The bytes as text, refusing invalid UTF-8 with the line it is on. */
export async function* utf8Text(input: AsyncIterable<Buffer>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  let lines = 1;
  for await (const chunk of input) {
    let text: string;
    try {
      text = decoder.decode(chunk, { stream: true });
    } catch {
      const lossy = chunk.toString('utf8');
      const before = lossy.slice(0, Math.max(0, lossy.indexOf('\uFFFD')));
      throw new FileFault(lines + countLines(before), 'is not valid UTF-8');
    }
    lines += countLines(text);
    yield text;
  }
  try {
    const rest = decoder.decode();
    if (rest !== '') yield rest;
  } catch {
    throw new FileFault(lines, 'is not valid UTF-8 (it ends inside a character)');
  }
}

function countLines(text: string): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The first key that valid JSON object text gives twice at its top level, or undefined: JSON.parse
 * keeps the last silently, where `POST /users` refuses a field given twice.
 */
function repeatedKey(text: string): string | undefined {
  const seen = new Set<string>();
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      let j = i + 1;
      while (j < text.length && text.charCodeAt(j) !== 34) j += text.charCodeAt(j) === 92 ? 2 : 1;
      if (depth === 1) {
        let k = j + 1;
        while (k < text.length && /\s/.test(text[k] as string)) k++;
        if (text[k] === ':') {
          const key = JSON.parse(text.slice(i, j + 1)) as string;
          if (seen.has(key)) return key;
          seen.add(key);
        }
      }
      i = j;
    } else if (c === 123 || c === 91) depth++;
    else if (c === 125 || c === 93) depth--;
  }
  return undefined;
}

/** A parsed JSON value as a row: a record's fields, or why it is not one. */
function jsonRow(line: number, value: unknown, raw: string): Row {
  if (!isObject(value)) return { line, fields: undefined, fault: 'is not a JSON object', raw };
  const twice = repeatedKey(raw);
  if (twice !== undefined)
    return { line, fields: undefined, fault: `gives ${JSON.stringify(twice)} more than once`, raw };
  return { line, fields: value, raw };
}

/** NDJSON: one JSON object a line; blank lines skipped. A batch of rows per chunk; a line over MAX_LINE is refused. */
export async function* ndjsonRows(text: AsyncIterable<string>): AsyncGenerator<Row[]> {
  let carry = '';
  let line = 0;
  const row = (raw: string): Row | undefined => {
    line++;
    const trimmed = raw.replace(/\r$/, '').replace(/^\uFEFF/, '');
    if (trimmed.trim() === '') return undefined;
    try {
      return jsonRow(line, JSON.parse(trimmed), trimmed);
    } catch (error) {
      return { line, fields: undefined, fault: `is not valid JSON (${(error as Error).message})`, raw: trimmed };
    }
  };
  for await (const chunk of text) {
    // Only the new chunk is searched for line breaks: a long line is not scanned again and again.
    const lf = chunk.indexOf('\n');
    if (lf === -1) {
      carry += chunk;
      if (carry.length > MAX_LINE) throw new LineTooLong(line + 1);
      continue;
    }
    const parts = [carry + chunk.slice(0, lf), ...chunk.slice(lf + 1).split('\n')];
    carry = parts.pop() ?? '';
    const rows: Row[] = [];
    for (const part of parts) {
      if (part.length > MAX_LINE) throw new LineTooLong(line + 1);
      const next = row(part);
      if (next !== undefined) rows.push(next);
    }
    if (carry.length > MAX_LINE) throw new LineTooLong(line + 1);
    if (rows.length > 0) yield rows;
  }
  const last = row(carry);
  if (last !== undefined) yield [last];
}

/**
 * JSON: `{"data":[...]}` as `GET /users` answers, or a bare array, read element by element (never
 * the whole file at once). Each element is parsed alone; the structure around them must be sound.
 * A batch of rows per chunk; an element over MAX_LINE is refused (the file may be a single line).
 */
export async function* jsonRows(text: AsyncIterable<string>): AsyncGenerator<Row[]> {
  let state: 'before' | 'envelope' | 'between' | 'element' | 'after' | 'done' = 'before';
  let line = 1;
  let envelope = '';
  let wrapped = false;
  let expectComma = false;
  let element = '';
  let elementLine = 0;
  let depth = 0;
  let inString = false;
  let escaped = false;
  const finish = (): Row => {
    state = 'between';
    expectComma = true;
    const raw = element.trim();
    element = '';
    try {
      return jsonRow(elementLine, JSON.parse(raw), raw);
    } catch (error) {
      return { line: elementLine, fields: undefined, fault: `is not valid JSON (${(error as Error).message})`, raw };
    }
  };
  for await (let chunk of text) {
    if (state === 'before' && line === 1 && chunk.startsWith('\uFEFF')) chunk = chunk.slice(1);
    let start = state === 'element' ? 0 : -1;
    const rows: Row[] = [];
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i] as string;
      if (c === '\n') line++;
      if (state === 'element') {
        if (inString) {
          if (escaped) escaped = false;
          else if (c === '\\') escaped = true;
          else if (c === '"') inString = false;
          continue;
        }
        if (c === '"') inString = true;
        else if (c === '{' || c === '[') depth++;
        else if ((c === '}' || c === ']') && depth > 0) depth--;
        else if (depth === 0 && (c === ',' || c === ']')) {
          element += chunk.slice(start, i);
          if (element.length > MAX_LINE) throw new LineTooLong(elementLine, 'a record');
          rows.push(finish());
          if (c === ',') expectComma = false;
          else state = 'after';
        }
        continue;
      }
      if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
        if (state === 'envelope') envelope += c;
        continue;
      }
      switch (state) {
        case 'before':
          if (c === '[') state = 'between';
          else if (c === '{') {
            state = 'envelope';
            wrapped = true;
          } else throw new FileFault(line, 'is not JSON holding an array of records ({"data":[...]} or [...])');
          break;
        case 'envelope':
          if (c !== '[') envelope += c;
          else if (/^\s*"data"\s*:\s*$/.test(envelope)) state = 'between';
          else throw new FileFault(line, 'is a JSON object without a "data" array first');
          break;
        case 'between':
          if (c === ']') state = 'after';
          else if (c === ',' && expectComma) expectComma = false;
          else if (expectComma) throw new FileFault(line, `has ${JSON.stringify(c)} where a comma or ] belongs`);
          else if (c === ',') throw new FileFault(line, 'has a comma where a record belongs');
          else {
            state = 'element';
            elementLine = line;
            start = i;
            depth = 0;
            inString = false;
            escaped = false;
            i--;
            if (c === '\n') line--;
            // The element's first character is read again in the element state.
          }
          break;
        case 'after':
          if (wrapped && c === '}') state = 'done';
          else throw new FileFault(line, `has ${JSON.stringify(c)} after the array of records`);
          break;
        case 'done':
          throw new FileFault(line, `has ${JSON.stringify(c)} after the end of the JSON`);
      }
    }
    if (state === 'element') {
      element += chunk.slice(start);
      if (element.length > MAX_LINE) throw new LineTooLong(elementLine, 'a record');
    }
    if (envelope.length > MAX_LINE) throw new LineTooLong(line, 'the text before "data"');
    if (rows.length > 0) yield rows;
  }
  const end: string = state;
  if (end === 'element' || end === 'between' || end === 'before' || end === 'envelope')
    throw new FileFault(line, 'ends before its array of records does');
  if (end === 'after' && wrapped) throw new FileFault(line, 'ends before the closing } of {"data":[...]}');
}

const COLUMNS: readonly string[] = RECORD_FIELDS;
const NEEDS = `it needs ${fieldList(RECORD_FIELDS, 'and')}, in any order`;

/** CSV with a header row (RFC 4180 quoting, optional BOM, CRLF or LF); empty lines skipped. A batch of rows per chunk. */
export async function* csvRows(
  text: AsyncIterable<string>,
  onHeader: (header: string[]) => void,
): AsyncGenerator<Row[]> {
  let header: string[] | undefined;
  try {
    for await (const records of csvRecords(text)) {
      const rows: Row[] = [];
      for (const { fields: record, line } of records) {
        // An empty line, or one of only spaces.
        if (record.length === 1 && (record[0] as string).trim() === '') continue;
        if (header === undefined) {
          header = checkHeader(record, line);
          onHeader(header);
          continue;
        }
        if (record.length !== header.length) {
          rows.push({
            line,
            fields: undefined,
            fault: `has ${record.length} fields, the header ${header.length}`,
            raw: record,
          });
          continue;
        }
        const fields: Record<string, unknown> = {};
        for (let i = 0; i < header.length; i++) fields[header[i] as string] = record[i];
        rows.push({ line, fields, raw: record });
      }
      if (rows.length > 0) yield rows;
    }
  } catch (error) {
    if (error instanceof CsvSyntaxError) throw new FileFault(error.line, `is not valid CSV: ${error.message}`);
    throw error;
  }
  if (header === undefined) throw new FileFault(1, `has no header row (${RECORD_FIELDS.join(',')})`);
}

/** More columns than a header of a record file could have: refused before they are compared. */
const MAX_COLUMNS = 64;

/** At most this many names of unknown columns are listed in the reason. */
const LISTED = 10;

const listed = (names: string[]) =>
  names.length > LISTED ? `${names.slice(0, LISTED).join(', ')} and ${names.length - LISTED} more` : names.join(', ');

/**
 * The header's names, trimmed and in lower case (`Name` is `name`); unknown, missing or repeated
 * columns are a fault of the file, with a hint for the usual reason (another separator).
 */
function checkHeader(record: string[], line: number): string[] {
  const first = record[0] ?? '';
  if (record.length === 1 && /[;\t|]/.test(first)) {
    const separator = first.includes(';') ? 'semicolons' : first.includes('\t') ? 'tabs' : 'bars';
    throw new FileFault(
      line,
      `header: its columns are separated by ${separator}; this reads CSV separated by commas (save it as "CSV, comma-delimited")`,
    );
  }
  if (record.length > MAX_COLUMNS) {
    throw new FileFault(line, `header: ${record.length} columns; ${NEEDS}`);
  }
  const header = record.map((name) => name.trim().toLowerCase());
  const unknown = header.filter((name) => !COLUMNS.includes(name));
  const missing = COLUMNS.filter((name) => !header.includes(name));
  const twice = header.filter((name, i) => header.indexOf(name) !== i);
  const faults = [
    unknown.length > 0 ? `unknown columns: ${listed(unknown)}` : '',
    missing.length > 0 ? `missing columns: ${missing.join(', ')}` : '',
    twice.length > 0 ? `columns named twice: ${listed(twice)}` : '',
  ].filter((fault) => fault !== '');
  if (faults.length > 0) throw new FileFault(line, `header: ${faults.join('; ')} (${NEEDS})`);
  return header;
}

/** Where rejected rows go with --skip-invalid: a file of the input's format, of those rows as they were. */
export class RejectsWriter {
  readonly #out: Writable;
  readonly #format: Format;
  #count = 0;
  #header: string[] | undefined;

  constructor(out: Writable, format: Format) {
    this.#out = out;
    this.#format = format;
  }

  get count(): number {
    return this.#count;
  }

  /** The CSV header, written before the first rejected row. */
  header(columns: string[]): void {
    this.#header = columns;
  }

  write(row: Row): void {
    const first = this.#count++ === 0;
    if (this.#format === 'csv') {
      // The rows as the input had them, to be mended and imported again: not made inert.
      if (first && this.#header !== undefined) this.#out.write(csvLine(this.#header, { raw: true }));
      this.#out.write(csvLine(row.raw as string[], { raw: true }));
    } else if (this.#format === 'ndjson') this.#out.write(`${row.raw as string}\n`);
    else this.#out.write(`${first ? '{"data":[\n' : ',\n'}${row.raw as string}`);
  }

  /** Closes the JSON array (the caller ends the stream). */
  close(): void {
    if (this.#format === 'json') this.#out.write(this.#count === 0 ? '{"data":[]}\n' : '\n]}\n');
  }
}
