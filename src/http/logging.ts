import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { DestinationStream } from 'pino';
import type { FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import type { LogLevel } from '../config/load.ts';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The route of an access-log line when no route matched: the path itself is never logged. */
export const UNMATCHED = '(unmatched)';

/**
 * A request as the logs show it: the route pattern (`/users/:id`), never the path (a client may
 * put anything there), and the query with its values hidden, since query strings carry personal
 * data. Names the service knows are kept (useful, never personal); any other part is hidden whole,
 * as a client may put data there.
 */
export function redactUrl(url: string, knownNames: ReadonlySet<string>, route = UNMATCHED): string {
  const question = url.indexOf('?');
  if (question === -1) return route;
  const parts = url
    .slice(question + 1)
    .split('&')
    .filter((part) => part !== '')
    .map((part) => {
      const name = part.split('=')[0] ?? '';
      return knownNames.has(name) ? `${name}=[redacted]` : '[redacted]';
    });
  return `${route}?${parts.join('&')}`;
}

/** A client's X-Request-Id when it is a sane token, otherwise a fresh UUID. */
export function requestId(request: IncomingMessage): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * JSON logs with a request id on every line; no header, body, path or query value is ever logged.
 * Lines go to `stream` (standard output through a bounded buffer, see logs/output.ts).
 */
export function loggerOptions(
  level: LogLevel,
  stream: DestinationStream | undefined,
  knownNames: ReadonlySet<string>,
): FastifyServerOptions['logger'] {
  return {
    level,
    stream,
    serializers: {
      req: (request: { method: string; url: string; ip?: string; routeOptions?: { url?: string } }) => ({
        method: request.method,
        url: redactUrl(request.url, knownNames, request.routeOptions?.url),
        remoteAddress: request.ip,
      }),
      res: (reply: { statusCode: number }) => ({ statusCode: reply.statusCode }),
    },
  };
}

/**
 * The access-log line of a request once its answer has gone: method, route, redacted query,
 * status and time taken. (Fastify's own request logging writes two lines a request.)
 */
export function logAnswer(request: FastifyRequest, reply: FastifyReply): void {
  request.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
}
