import type { FastifyInstance, FastifyRequest } from 'fastify';
import secureJson from 'secure-json-parse';
import { RECORD_FIELDS } from '../record/fields.ts';
import { HttpError } from './problem.ts';
import { MAX_BATCH } from './limits.ts';
import { addParamErrors, MAX_PARAMETERS, parseParams } from './query-string.ts';

const utf8 = new TextDecoder('utf-8', { fatal: true });

const UNSUPPORTED =
  'Send the body as application/json or application/x-www-form-urlencoded (or many records to POST /users as application/x-ndjson), or send the parameters in the query string.';

/**
 * Body parsers: strict JSON and strict form bodies, an empty body of any type counts as no body,
 * and any other content type is refused. None of them echoes the body back, so nothing a client
 * sent ends up in an error message or a log line.
 */
export function registerBodyParsers(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();

  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    if (isBlank(body)) return done(null, undefined);
    sizes.set(request, body.length);
    let text: string;
    try {
      text = utf8.decode(body);
    } catch {
      return done(new HttpError('malformed-request', 'The JSON body is not valid UTF-8.'));
    }
    // Records are the objects one level down: an array's elements (the body's own object keeps
    // its rule: MAX_PARAMETERS read, the rest reported).
    const parsed = parseJson(text, 'The JSON body', 2);
    if (parsed instanceof HttpError) return done(parsed);
    done(null, parsed);
  });

  // A batch of records for POST /users, one JSON object per line; an array to the routes, as a
  // JSON array would be. Any other route refuses the type.
  app.addContentTypeParser(NDJSON_TYPE, { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    if (request.method !== 'POST' || request.routeOptions.url !== '/users') {
      return done(new HttpError('unsupported-media-type', UNSUPPORTED));
    }
    // A blank body of this type is a batch of no records (refused as such), not a missing body.
    if (isBlank(body)) return done(null, []);
    sizes.set(request, body.length);
    let text: string;
    try {
      text = utf8.decode(body);
    } catch {
      return done(new HttpError('malformed-request', 'The NDJSON body is not valid UTF-8.'));
    }
    const records: unknown[] = [];
    const lines = text.split('\n');
    for (let i = 0; i < lines.length; i++) {
      const line = (lines[i] as string).trim();
      if (line === '') continue;
      if (records.length === MAX_BATCH) {
        return done(new HttpError('payload-too-large', batchTooLarge(`more than ${MAX_BATCH}`)));
      }
      const parsed = parseJson(line, `Line ${i + 1} of the NDJSON body`, 1);
      if (parsed instanceof HttpError) return done(parsed);
      records.push(parsed);
    }
    done(null, records);
  });

  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'buffer' },
    (request, body: Buffer, done) => {
      if (isBlank(body)) return done(null, undefined);
      sizes.set(request, body.length);
      done(null, parseParams(body.toString('latin1')));
    },
  );

  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body: Buffer, done) => {
    if (isBlank(body)) return done(null, undefined);
    done(new HttpError('unsupported-media-type', UNSUPPORTED));
  });
}

/** The size in bytes of each JSON or form body read, for a route whose limit depends on its content. */
const sizes = new WeakMap<FastifyRequest, number>();

/** The size of the JSON or form body this request carried (0 without one). */
export function bodySize(request: FastifyRequest): number {
  return sizes.get(request) ?? 0;
}

/**
 * How deep a JSON body may nest, and how many names an object of a batch may have: a record is one
 * flat object, so past these the body is refused before it is parsed, which would cost time and
 * memory in proportion (a 2 MiB body of one object with 150,000 names, or of a million brackets).
 */
const MAX_DEPTH = 8;

/**
 * A JSON text's value, or the 400 that refuses it: too deep, too many names in an object at
 * `recordDepth` or below (1: the value is a record, an NDJSON line; 2: the records are one level
 * down, an array's elements), not JSON, a forbidden key. Keys given twice are marked
 * (markRepeatedKeys).
 */
function parseJson(text: string, what: string, recordDepth: number): unknown {
  const shape = shapeFault(text, recordDepth);
  if (shape !== undefined) return new HttpError('malformed-request', `${what} ${shape}.`);
  let value: unknown;
  try {
    value = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    const forbidden = /forbidden (prototype|constructor)/i.test((error as Error).message);
    return new HttpError(
      'malformed-request',
      forbidden
        ? `${what} contains a forbidden key (__proto__ or constructor.prototype).`
        : `${what} is not valid JSON.`,
    );
  }
  markRepeatedKeys(text, value);
  return value;
}

/**
 * Why a JSON text's shape is refused before parsing, if it is: nested deeper than MAX_DEPTH, or an
 * object at `recordDepth` or deeper (a record, or what a record holds) with more than
 * MAX_PARAMETERS names. One pass over the text, strings skipped; an unfinished string or text that
 * is not JSON is left to the parser.
 */
export function shapeFault(text: string, recordDepth: number): string | undefined {
  // Names counted in each object open at this point, by depth (0: not an object).
  const names: number[] = [];
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (char === 0x22) {
      // A string: to its closing quote, past escapes.
      let end = i + 1;
      while (end < text.length && text.charCodeAt(end) !== 0x22) end += text.charCodeAt(end) === 0x5c ? 2 : 1;
      i = end;
    } else if (char === 0x7b || char === 0x5b) {
      if (++depth > MAX_DEPTH) return `is nested deeper than ${MAX_DEPTH} levels`;
      names[depth] = char === 0x7b ? 0 : -1;
    } else if (char === 0x7d || char === 0x5d) {
      depth--;
    } else if (char === 0x3a && depth >= recordDepth && (names[depth] ?? -1) >= 0) {
      // A colon in an object ends a name.
      if (++(names[depth] as number) > MAX_PARAMETERS) {
        return `has an object of more than ${MAX_PARAMETERS} names (a record has ${RECORD_FIELDS.length})`;
      }
    }
  }
  return undefined;
}

/** The media type of a body of one JSON record per line. */
export const NDJSON_TYPE = 'application/x-ndjson';

/** The 413 detail for a batch of `count` records. */
export function batchTooLarge(count: string): string {
  return `One request creates at most ${MAX_BATCH} records; this one has ${count}. Send them in several requests.`;
}

/**
 * Records a fault for each key given twice in an object (JSON.parse would silently keep the
 * last): in the body's object, or in each object of a body's array.
 */
function markRepeatedKeys(text: string, value: unknown): void {
  if (typeof value !== 'object' || value === null) return;
  const elements = Array.isArray(value) ? (value as unknown[]) : [value];
  for (const [element, keys] of repeatedKeys(text)) {
    const target = elements[element];
    if (typeof target !== 'object' || target === null) continue;
    addParamErrors(
      target,
      keys.map((parameter) => ({ parameter, detail: 'must be given only once, as a single value' })),
    );
  }
}

function isBlank(body: Buffer): boolean {
  return body.length === 0 || body.toString('latin1').trim() === '';
}

/**
 * Keys that stand more than once in one object: the body's own object (element 0), or each object
 * of the body's array, by its place in it. The text must already be known to be valid JSON.
 */
export function repeatedKeys(text: string): Map<number, string[]> {
  const repeated = new Map<number, string[]>();
  // Objects are looked at one level down in an array: depth 1 for an object body, 2 in an array.
  const first = text.trimStart()[0];
  const keyDepth = first === '[' ? 2 : 1;
  let element = 0;
  let seen = new Set<string>();
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      if (depth === keyDepth && expectKey) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (seen.has(key)) {
          const keys = repeated.get(element) ?? [];
          if (!keys.includes(key)) keys.push(key);
          repeated.set(element, keys);
        }
        seen.add(key);
        expectKey = false;
      }
      i = end;
    } else if (char === '{' || char === '[') {
      depth++;
      if (depth === keyDepth && char === '{') {
        seen = new Set();
        expectKey = true;
      }
    } else if (char === '}' || char === ']') {
      depth--;
    } else if (char === ',') {
      if (depth === keyDepth) expectKey = true;
      else if (keyDepth === 2 && depth === 1) element++;
    }
  }
  return repeated;
}
