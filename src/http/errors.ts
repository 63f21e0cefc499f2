import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Counter } from 'prom-client';
import {
  StoreAtEndError,
  StoreBusyError,
  StoreGaveUpError,
  StoreTimeoutError,
  StoreUnavailableError,
} from '../store/store.ts';
import { answerBegan, logCutShort } from './cut-short.ts';
import { BATCH_BODY_LIMIT, BODY_LIMIT, kib, URL_LIMIT } from './limits.ts';
import {
  codeForStatus,
  HttpError,
  PROBLEM_CONTENT_TYPE,
  type Problem,
  type ProblemCode,
  problem,
  toProblem,
} from './problem.ts';
import type { RateLimiter } from './rate-limit.ts';
import { JSON_HEADERS } from './security-headers.ts';

/** Requests answered before any route saw them, by status; shown by /metrics (registered there). */
export const refusedBeforeRouting = new Counter({
  name: 'http_requests_refused_before_routing_total',
  help: 'Requests answered before any route saw them (unparsable HTTP, a slow request, an undecodable URL), by status.',
  labelNames: ['status'] as const,
  registers: [],
});

/** Sends a problem-details body. */
export function sendProblem(reply: FastifyReply, body: Problem): FastifyReply {
  return reply.code(body.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(body));
}

/** Words for framework errors; their own messages may quote the request, so they are not used. */
const FRAMEWORK_DETAILS: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: `The body is larger than the service accepts (${kib(BODY_LIMIT)}; ${BATCH_BODY_LIMIT / 1024 / 1024} MiB for POST /users, which may carry many records).`,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'The Content-Length header does not match the body.',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'The body has no usable Content-Type.',
  FST_ERR_BAD_URL: 'The URL is not correctly percent-encoded.',
  FST_ERR_MAX_PARAM_LENGTH: 'The URL path is too long.',
};

/** The detail of a listing given up: what was too slow, and what makes it cheaper. */
const LISTING_TIMEOUT =
  'The listing was not read within the database time limit (DATABASE_TIMEOUT_MS) and was given up. A search of one or two characters, or a filter or sort that no index serves, reads every record: search for three characters or more, add a filter, or retry shortly.';

/** Turns anything thrown into problem details; 5xx hide their cause from the client and log it. */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof StoreBusyError) {
    return new HttpError('too-many-listings', 'Too many listings are waiting to be read; retry shortly.', {
      headers: { 'retry-after': '1' },
    });
  }
  if (error instanceof StoreAtEndError) return new HttpError('range-exhausted', error.message);
  if (error instanceof StoreTimeoutError) {
    return new HttpError('listing-timeout', LISTING_TIMEOUT, { headers: { 'retry-after': '1' } });
  }
  if (error instanceof StoreUnavailableError) {
    return new HttpError('unavailable', 'The database is busy or not reachable; retry shortly.', {
      headers: { 'retry-after': '1' },
    });
  }
  const fastifyError = error as Partial<FastifyError>;
  const status = fastifyError.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const code: ProblemCode = codeForStatus(status);
    const detail = FRAMEWORK_DETAILS[fastifyError.code ?? ''] ?? `${STATUS_CODES[status] ?? 'Bad request'}.`;
    return new HttpError(code, detail);
  }
  return new HttpError('internal', 'The service failed to handle the request; it has been logged.');
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The 503 of a write the database failed: it may have been stored all the same. */
export const OUTCOME_UNKNOWN =
  'The database failed or is not reachable; this change may or may not have been stored (its outcome is unknown). Retry shortly: check the record first, or repeat a POST with the same Idempotency-Key, which stores it at most once.';

/** The 503 of a write given up before it ran: its outcome is known. */
export const NOT_STORED =
  'The database did not take this change within its time limit (DATABASE_TIMEOUT_MS): another process held its write lock, or writes queued before it took that long. It was not stored; retry shortly.';

/** The error handler and the 404 of unknown paths, both in problem details. */
export function registerErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    if (answerBegan(reply)) {
      // Too late for a problem: the client has a 200 and part of a body, which can only end cut short.
      logCutShort(request, error);
      reply.raw.destroy();
      return;
    }
    let httpError = toHttpError(error);
    if (error instanceof StoreUnavailableError && !READS.has(request.method)) {
      // A commit can fail after its data reached the disk (an fsync error, a connection lost while
      // COMMIT was on its way): the client cannot know, and is told so; unless it never ran.
      const detail = error instanceof StoreGaveUpError ? NOT_STORED : OUTCOME_UNKNOWN;
      httpError = new HttpError('unavailable', detail, { headers: httpError.headers });
    }
    if (httpError.status >= 500 && httpError.code !== 'internal') {
      // A fault the client may retry (the database away, overload): a reason, no stack.
      request.log.warn({ problem: httpError.code, reason: (error as Error).message }, 'request refused: unavailable');
    } else if (httpError.status >= 500) request.log.error({ err: error }, 'request failed');
    else request.log.info({ problem: httpError.code, status: httpError.status }, 'request refused');
    reply.headers(httpError.headers);
    return sendProblem(reply, toProblem(httpError));
  });

  // The path is not repeated: it may carry what a client should not have put there.
  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, problem('not-found', `Nothing is served at this path (${request.method}).`)),
  );
}

/**
 * The answers made before any route or hook runs: an URL Fastify cannot decode, HTTP that Node
 * cannot parse, an Expect it does not meet. They carry the security headers and count against the
 * client's rate limit like any other request.
 */
export function earlyRefusals(limiter: RateLimiter | undefined) {
  const count = (status: number, address: string | undefined) => {
    refusedBeforeRouting.inc({ status });
    limiter?.hit(address);
  };

  /** For FastifyServerOptions.frameworkErrors: errors raised before routing (bad URL encoding). */
  const frameworkErrors = (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    const httpError = toHttpError(error);
    count(httpError.status, request.ip);
    reply.header('x-request-id', request.id).headers(JSON_HEADERS);
    void sendProblem(reply, toProblem(httpError));
    // These requests skip the hooks that normally log the outcome.
    request.log.info(
      { req: request, res: { statusCode: httpError.status }, problem: httpError.code },
      'request completed',
    );
  };

  /** Node's answer to an Expect header other than 100-continue, as a problem instead of an empty 417. */
  const refuseExpectation = (request: IncomingMessage, response: ServerResponse): void => {
    const body = JSON.stringify(problem('expectation-failed', 'Only "Expect: 100-continue" is supported.'));
    count(417, request.socket.remoteAddress);
    response.writeHead(417, {
      ...JSON_HEADERS,
      'content-type': PROBLEM_CONTENT_TYPE,
      'content-length': Buffer.byteLength(body),
    });
    response.end(body);
  };

  /** For FastifyServerOptions.clientErrorHandler: requests Node's HTTP parser could not read. */
  const clientErrorHandler = (error: NodeJS.ErrnoException, socket: Socket): void => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    let body: Problem;
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      body = problem('request-timeout', 'The request took too long to arrive.');
    } else if (error.code === 'HPE_HEADER_OVERFLOW' && longRequestLine((error as { rawPacket?: unknown }).rawPacket)) {
      body = problem('uri-too-long', `The URL is longer than the service reads (${kib(URL_LIMIT)}).`);
    } else if (error.code === 'HPE_HEADER_OVERFLOW') {
      body = problem('headers-too-large', 'The request line and headers together exceed the limit.');
    } else {
      body = problem('malformed-request', 'The request is not valid HTTP.');
    }
    count(body.status, socket.remoteAddress);
    if (socket.writable) {
      const text = JSON.stringify(body);
      const headers = {
        ...JSON_HEADERS,
        connection: 'close',
        'content-type': PROBLEM_CONTENT_TYPE,
        'content-length': String(Buffer.byteLength(text)),
      };
      const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
      socket.write(`HTTP/1.1 ${body.status} ${STATUS_CODES[body.status]}\r\n${head.join('')}\r\n${text}`);
    }
    socket.destroy(error);
  };

  return { frameworkErrors, refuseExpectation, clientErrorHandler };
}

/**
 * Whether the bytes Node could not parse start with a request line longer than the URL limit: Node
 * refuses a request whose line and headers pass 16 KiB before any route sees it, so a URL too long
 * for the service's own check (414) arrives here as a header overflow.
 */
function longRequestLine(packet: unknown): boolean {
  if (!Buffer.isBuffer(packet) || !/^[A-Z]+ /.test(packet.subarray(0, 16).toString('latin1'))) return false;
  // Only the URL counts, as in the service's own check: "METHOD URL HTTP/1.1", possibly cut short.
  const start = packet.indexOf(' ') + 1;
  const end = packet.indexOf('\r\n');
  const line = end === -1 ? packet.length : end;
  const space = packet.lastIndexOf(' ', line - 1);
  const stop = end !== -1 && space >= start ? space : line;
  return stop - start > URL_LIMIT;
}
