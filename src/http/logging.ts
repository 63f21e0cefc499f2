import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { hostname } from 'node:os';
import type { DestinationStream } from 'pino';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';
import type { LogLevel } from '../config/load.ts';
import { policyOf } from './policy.ts';

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

type LogArgs = Parameters<FastifyBaseLogger['info']>;

/**
 * A request's logger, made only when the request logs something other than its access line
 * (Fastify would otherwise make a pino child for every request, a measurable share of its cost).
 */
class LazyRequestLogger {
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #child: FastifyBaseLogger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  #real(): FastifyBaseLogger {
    this.#child ??= this.#parent.child(this.#bindings, this.#options);
    return this.#child;
  }

  get level(): string {
    return this.#child?.level ?? this.#parent.level;
  }

  set level(level: string) {
    this.#real().level = level;
  }

  fatal(...args: LogArgs): void {
    this.#real().fatal(...args);
  }

  error(...args: LogArgs): void {
    this.#real().error(...args);
  }

  warn(...args: LogArgs): void {
    this.#real().warn(...args);
  }

  info(...args: LogArgs): void {
    this.#real().info(...args);
  }

  debug(...args: LogArgs): void {
    this.#real().debug(...args);
  }

  trace(...args: LogArgs): void {
    this.#real().trace(...args);
  }

  silent(...args: LogArgs): void {
    this.#real().silent(...args);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#real().child(bindings, options);
  }
}

/** For FastifyServerOptions.childLoggerFactory: a request's logger, made when first used. */
export function lazyRequestLogger(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  return new LazyRequestLogger(parent, bindings, options) as unknown as FastifyBaseLogger;
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
      req: (request: FastifyRequest) => ({
        method: request.method,
        url: redactUrl(request.url, knownNames, policyOf(request).route),
        remoteAddress: request.ip,
      }),
      res: (reply: { statusCode: number }) => ({ statusCode: reply.statusCode }),
    },
  };
}

const INFO = 30;
const LEVELS: Record<LogLevel, number> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
  silent: Infinity,
};

/**
 * The access log: one line per request once its answer has gone (method, route, redacted query,
 * client address, status, time taken), as pino writes it, with the request id. It is written
 * here, not through pino: it is the one line of every request, and every field is of a known,
 * safe alphabet (an id we checked or made, a method Node checked, our own route patterns and
 * parameter names, an IP address), so the line is put together directly. Other lines go
 * through pino. (Fastify's own request logging writes two lines a request.)
 */
export function accessLog(
  stream: DestinationStream | undefined,
  level: LogLevel,
  knownNames: ReadonlySet<string>,
): (request: FastifyRequest, reply: FastifyReply) => void {
  if (stream === undefined || LEVELS[level] > INFO) return () => undefined;
  const base = `,"pid":${process.pid},"hostname":${JSON.stringify(hostname())}`;
  return (request, reply) => {
    const url = redactUrl(request.url, knownNames, policyOf(request).route);
    const address = request.ip === undefined ? '' : `,"remoteAddress":${JSON.stringify(request.ip)}`;
    stream.write(
      `{"level":30,"time":${Date.now()}${base},"requestId":"${request.id}","req":{"method":"${request.method}","url":${JSON.stringify(url)}${address}},"res":{"statusCode":${reply.statusCode}},"responseTime":${reply.elapsedTime},"msg":"request completed"}\n`,
    );
  };
}
