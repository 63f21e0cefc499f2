import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { LogLevel } from '../config.ts';
import { logOutput } from '../ops/log-output.ts';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Hides the query values of a URL, since query strings carry personal data. Names the service knows
 * are kept (useful, never personal); any other part is hidden whole, as a client may put data there.
 */
export function redactUrl(url: string, knownNames: ReadonlySet<string>): string {
  const question = url.indexOf('?');
  if (question === -1) return url;
  const parts = url
    .slice(question + 1)
    .split('&')
    .filter((part) => part !== '')
    .map((part) => {
      const name = part.split('=')[0] ?? '';
      return knownNames.has(name) ? `${name}=[redacted]` : '[redacted]';
    });
  return `${url.slice(0, question)}?${parts.join('&')}`;
}

/** A client's X-Request-Id when it is a sane token, otherwise a fresh UUID. */
export function requestId(request: IncomingMessage): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * JSON logs with a request id on every line; no header, body or query value is ever logged. Lines go
 * to standard output through a bounded buffer (`logOutput`).
 */
export function loggerOptions(
  level: LogLevel,
  bufferMb: number,
  knownNames: ReadonlySet<string>,
): FastifyServerOptions['logger'] {
  return {
    level,
    stream: logOutput(level, bufferMb),
    serializers: {
      req: (request: { method: string; url: string; ip?: string }) => ({
        method: request.method,
        url: redactUrl(request.url, knownNames),
        remoteAddress: request.ip,
      }),
      res: (reply: { statusCode: number }) => ({ statusCode: reply.statusCode }),
    },
  };
}

/**
 * One line per request, when its answer has gone: method, redacted URL, status and time taken.
 * (Fastify's own request logging writes two lines a request, which costs a measurable share of a
 * fast request.) A request the client abandons gets a line too.
 */
export function registerAccessLog(app: FastifyInstance): void {
  app.addHook('onResponse', async (request, reply) => {
    request.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  });
  app.addHook('onRequestAbort', async (request) => {
    request.log.info({ req: request }, 'request aborted by the client');
  });
}
