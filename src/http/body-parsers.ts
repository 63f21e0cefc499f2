import type { FastifyInstance, FastifyRequest } from 'fastify';
import secureJson from 'secure-json-parse';
import { HttpError } from './problem.ts';
import { MAX_BATCH } from './limits.ts';
import { addParamErrors, parseParams } from './query-string.ts';

const utf8 = new TextDecoder('utf-8', { fatal: true });

const UNSUPPORTED =
  'Send the body as application/json or application/x-www-form-urlencoded, or send the parameters in the query string.';

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
    let value: unknown;
    try {
      value = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
    } catch (error) {
      const forbidden = /forbidden (prototype|constructor)/i.test((error as Error).message);
      const detail = forbidden
        ? 'The JSON body contains a forbidden key (__proto__ or constructor.prototype).'
        : 'The body is not valid JSON.';
      return done(new HttpError('malformed-request', detail));
    }
    markRepeatedKeys(text, value);
    done(null, value);
  });

  // A batch of records for POST /users, one JSON object per line; an array to the routes, as a
  // JSON array would be. Any other route refuses the type.
  app.addContentTypeParser(NDJSON_TYPE, { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    if (request.method !== 'POST' || request.routeOptions.url !== '/users') {
      return done(new HttpError('unsupported-media-type', UNSUPPORTED));
    }
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
      let value: unknown;
      try {
        value = secureJson.parse(line, undefined, { protoAction: 'error', constructorAction: 'error' });
      } catch {
        return done(new HttpError('malformed-request', `Line ${i + 1} of the NDJSON body is not a JSON value.`));
      }
      markRepeatedKeys(line, value);
      records.push(value);
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
