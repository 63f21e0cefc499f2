import type { FastifyInstance } from 'fastify';
import secureJson from 'secure-json-parse';
import { HttpError } from './problem.ts';
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

  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body: Buffer, done) => {
    if (isBlank(body)) return done(null, undefined);
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
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      const repeated = repeatedTopLevelKeys(text);
      addParamErrors(
        value,
        repeated.map((parameter) => ({ parameter, detail: 'must be given only once, as a single value' })),
      );
    }
    done(null, value);
  });

  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'buffer' },
    (_request, body: Buffer, done) => {
      if (isBlank(body)) return done(null, undefined);
      done(null, parseParams(body.toString('latin1')));
    },
  );

  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body: Buffer, done) => {
    if (isBlank(body)) return done(null, undefined);
    done(new HttpError('unsupported-media-type', UNSUPPORTED));
  });
}

function isBlank(body: Buffer): boolean {
  return body.length === 0 || body.toString('latin1').trim() === '';
}

/**
 * Keys that stand more than once at the top level of a JSON object text (JSON.parse would silently
 * keep the last). The text must already be known to be valid JSON whose value is an object.
 */
export function repeatedTopLevelKeys(text: string): string[] {
  const seen = new Set<string>();
  const repeated = new Set<string>();
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      if (depth === 1 && expectKey) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (seen.has(key)) repeated.add(key);
        seen.add(key);
        expectKey = false;
      }
      i = end;
    } else if (char === '{' || char === '[') {
      depth++;
      expectKey = depth === 1;
    } else if (char === '}' || char === ']') {
      depth--;
    } else if (char === ',' && depth === 1) {
      expectKey = true;
    }
  }
  return [...repeated];
}
