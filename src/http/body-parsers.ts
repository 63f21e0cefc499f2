import type { FastifyInstance } from 'fastify';
import secureJson from 'secure-json-parse';
import { HttpError } from './problem.ts';
import { MALFORMED, parseParams } from './query-string.ts';

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
    try {
      done(null, secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }));
    } catch (error) {
      const forbidden = /forbidden (prototype|constructor)/i.test((error as Error).message);
      const detail = forbidden
        ? 'The JSON body contains a forbidden key (__proto__ or constructor.prototype).'
        : 'The body is not valid JSON.';
      done(new HttpError('malformed-request', detail));
    }
  });

  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'buffer' },
    (_request, body: Buffer, done) => {
      if (isBlank(body)) return done(null, undefined);
      const params = parseParams(body.toString('latin1'));
      const malformed = params[MALFORMED];
      if (malformed !== undefined) return done(malformedParameters(malformed));
      done(null, params);
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

/** The 400 for parameters whose percent-encoding or UTF-8 is broken. */
export function malformedParameters(names: string[]): HttpError {
  return new HttpError(
    'invalid-input',
    'Some parameters are not correctly percent-encoded UTF-8; nothing was stored.',
    {
      errors: [...new Set(names)].map((parameter) => ({
        parameter,
        detail: 'is not correctly percent-encoded UTF-8',
      })),
    },
  );
}
