import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyServerOptions } from 'fastify';
import type { LogLevel } from '../config.ts';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Keeps the parameter names of a URL and hides their values: query strings carry personal data. */
export function redactUrl(url: string): string {
  const question = url.indexOf('?');
  if (question === -1) return url;
  const names = url
    .slice(question + 1)
    .split('&')
    .filter((part) => part !== '')
    .map((part) => `${part.split('=')[0]}=[redacted]`);
  return `${url.slice(0, question)}?${names.join('&')}`;
}

/** A client's X-Request-Id when it is a sane token, otherwise a fresh UUID. */
export function requestId(request: IncomingMessage): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/** JSON logs with a request id on every line; no header, body or query value is ever logged. */
export function loggerOptions(level: LogLevel): FastifyServerOptions['logger'] {
  return {
    level,
    serializers: {
      req: (request: { method: string; url: string; ip?: string }) => ({
        method: request.method,
        url: redactUrl(request.url),
        remoteAddress: request.ip,
      }),
      res: (reply: { statusCode: number }) => ({ statusCode: reply.statusCode }),
    },
  };
}
