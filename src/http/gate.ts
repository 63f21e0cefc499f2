import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type Authenticate, type AuthResult, grantScope } from './auth.ts';
import { hostHeaderCount, hostName, targetHost, validAuthority } from './hosts.ts';
import { kib, URL_LIMIT } from './limits.ts';
import type { OverloadMonitor } from './overload.ts';
import { decoratePolicy, policyOf } from './policy.ts';
import { HttpError } from './problem.ts';
import { invalidInput } from './validation.ts';
import { paramErrors } from './query-string.ts';
import type { Budget, RateLimiter } from './rate-limit.ts';
import { JSON_HEADERS, pageHeaders } from './security-headers.ts';

export interface GateOptions {
  /** Off only in the bench's price list, which measures what they cost. */
  securityHeaders: boolean;
  /** The per-client budget; none when RATE_LIMIT is off. */
  limiter: RateLimiter | undefined;
  /** The per-client budget of failed authentications, on every route; none when RATE_LIMIT is off. */
  guesses: RateLimiter | undefined;
  overload: OverloadMonitor;
  /** Host names answered to; undefined: any. */
  hosts: ReadonlySet<string> | undefined;
  /** Why a change from another site's page is refused (the origin), or undefined. */
  crossSiteWrite: (method: string, headers: FastifyRequest['headers']) => string | undefined;
  /** Checks the token; none when no tokens are configured. */
  authenticate: Authenticate | undefined;
  /** Registers CORS between the early refusals and authentication (its preflights carry no token). */
  cors?: (app: FastifyInstance) => Promise<void>;
}

const pageSets = new Map<string, Readonly<Record<string, string>>>();

function carry(request: FastifyRequest, reply: FastifyReply, csp: string | undefined): void {
  let set = JSON_HEADERS;
  if (csp !== undefined) {
    set = pageSets.get(csp) ?? pageHeaders(csp);
    pageSets.set(csp, set);
  }
  reply.header('x-request-id', request.id);
  for (const name in set) reply.header(name, set[name] as string);
}

/**
 * Every request's way to its route, in tiers whose order is this code's, not a comment's:
 * 1. what every answer carries (request id, security headers), so no refusal can go without them;
 * 2. what refuses a request before it costs anything: shutting down, a Host header that is
 *    missing, repeated or not ours, a URL too long, overload, a client over its budget (every
 *    request counts, refused ones too);
 * then CORS preflights, when CORS is on (browsers send them without a token);
 * 3. who is asking: a change from another site's page, the token (wrong ones are counted per client on
 *    every route, and past the budget refused with 429 wherever a token is needed);
 * 4. the query string's own faults, on routes that do not check their query with a schema.
 * Routes declare what they need (policy.ts): public, not shed, not rate limited.
 */
export async function registerGate(app: FastifyInstance, options: GateOptions): Promise<void> {
  decoratePolicy(app);
  const { limiter, guesses, overload, hosts, crossSiteWrite, authenticate, securityHeaders } = options;
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onListen', async () => overload.start());
  app.addHook('onClose', async () => {
    overload.stop();
    limiter?.close();
    guesses?.close();
  });

  /** Tiers 1 and 2: what every answer carries, and what refuses a request before it costs anything. */
  function carryAndRefuse(request: FastifyRequest, reply: FastifyReply): HttpError | undefined {
    const policy = policyOf(request);
    if (securityHeaders) carry(request, reply, policy.pageCsp);
    let budget: Budget | undefined;
    if (limiter !== undefined && policy.rateLimited) {
      budget = limiter.hit(request.ip);
      limiter.setHeaders(reply, budget);
    }
    if (closing) {
      return new HttpError('unavailable', 'The service is shutting down; retry on another instance.', {
        headers: { 'retry-after': '1', connection: 'close' },
      });
    }
    const host = request.headers.host;
    if (host === undefined ? request.raw.httpVersion === '1.1' : hostHeaderCount(request.raw.rawHeaders) > 1) {
      return new HttpError('malformed-request', 'An HTTP/1.1 request needs exactly one Host header.');
    }
    if (host !== undefined && host !== '' && !validAuthority(host)) {
      return new HttpError(
        'malformed-request',
        'The Host header is not a host name with an optional port up to 65535.',
      );
    }
    const named = hostInTarget(request);
    if (named instanceof HttpError) return named;
    const effective = named ?? host;
    if (hosts !== undefined && effective !== undefined && !hosts.has(hostName(effective))) return misdirected();
    if ((request.raw.url?.length ?? 0) > URL_LIMIT) {
      return new HttpError('uri-too-long', `The URL is longer than the service reads (${kib(URL_LIMIT)}).`);
    }
    const lag = policy.shed ? overload.lag() : undefined;
    if (lag !== undefined) {
      return new HttpError(
        'overloaded',
        `The service is overloaded (its event loop ran ${Math.round(lag)} ms late); retry shortly.`,
        { headers: { 'retry-after': String(Math.max(1, Math.ceil(lag / 1000))) } },
      );
    }
    if (limiter !== undefined && budget !== undefined && budget.count > limiter.limit) {
      return rateLimited(limiter, budget.resetAt);
    }
    return undefined;
  }

  /** Tiers 3 and 4: who is asking, then the query string's own faults; a promise only while a JWT is verified. */
  function identify(
    request: FastifyRequest,
    reply: FastifyReply,
  ): HttpError | undefined | Promise<HttpError | undefined> {
    const policy = policyOf(request);
    const origin = crossSiteWrite(request.method, request.headers);
    if (origin !== undefined) {
      return new HttpError(
        'cross-origin-write',
        'Changes sent from another site’s page are refused; the service lists the sites it trusts in CORS_ORIGINS.',
      );
    }
    if (authenticate !== undefined && !policy.public) {
      // A client that guessed wrong more than its budget allows is refused on every route that
      // needs a token, those outside the request budget (/metrics) included.
      const guessing = guesses?.exhausted(request.ip);
      if (guesses !== undefined && guessing !== undefined) return rateLimited(guesses, guessing.resetAt);
      const result = authenticate(request.method, request.headers.authorization);
      if (result instanceof Promise) return result.then((settled) => admit(request, reply, settled));
      return admit(request, reply, result);
    }
    return queryFaults(request, reply);
  }

  /** The token's verdict: refused (a wrong token counted and logged), or the request goes on with its scope. */
  function admit(request: FastifyRequest, reply: FastifyReply, result: AuthResult): HttpError | undefined {
    if ('error' in result) {
      const route = policyOf(request).route;
      if (result.guessed) {
        guesses?.hit(request.ip);
        request.log.warn({ remoteAddress: request.ip, route, reason: result.reason }, 'authentication failed');
      } else if (result.error.status === 503) {
        request.log.warn({ route, cause: result.reason }, 'the identity provider’s keys could not be fetched');
      }
      return result.error;
    }
    grantScope(request, result.scope);
    return queryFaults(request, reply);
  }

  function queryFaults(request: FastifyRequest, reply: FastifyReply): HttpError | undefined {
    const early = policyOf(request).querySchema ? [] : paramErrors(request.query);
    if (early.length > 0) return invalidInput(early);
    // "Expect: 100-continue" is answered only now: a client sends no body to a request refused anyway.
    const expect = request.headers.expect;
    if (expect !== undefined && expect.toLowerCase() === '100-continue') reply.raw.writeContinue();
    return undefined;
  }

  if (options.cors === undefined) {
    app.addHook('onRequest', (request, reply, done) => {
      const refused = carryAndRefuse(request, reply);
      if (refused !== undefined) done(refused);
      else settle(identify(request, reply), done);
    });
  } else {
    // CORS preflights are answered between the tiers: browsers send them without a token.
    app.addHook('onRequest', (request, reply, done) => done(carryAndRefuse(request, reply)));
    await options.cors(app);
    app.addHook('onRequest', (request, reply, done) => settle(identify(request, reply), done));
  }
}

/** Hands a verdict to the hook's callback at once, or once a JWT is verified (the hook stays callback-style: no promise for the common case). */
function settle(
  outcome: HttpError | undefined | Promise<HttpError | undefined>,
  done: (error?: HttpError) => void,
): void {
  if (outcome instanceof Promise) void outcome.then((error) => done(error), done);
  else done(outcome);
}

function misdirected(): HttpError {
  return new HttpError(
    'misdirected-request',
    'This service does not answer to that host name; see ALLOWED_HOSTS in its settings.',
  );
}

/**
 * The host an absolute-form target names (`GET http://example.com/users`), or an error for one that
 * names no host of ours or is malformed. It wins over the Host header (RFC 9112, 3.2.2), so Host is
 * replaced by it: every later check (the cross-site one compares Origin with it) sees the host meant.
 */
function hostInTarget(request: FastifyRequest): string | HttpError | undefined {
  const named = targetHost(request.raw.url ?? '');
  if (named === undefined) return undefined;
  if (named === 'misdirected') return misdirected();
  if (named === 'malformed') {
    return new HttpError(
      'malformed-request',
      'The request target names no host this service can read: send a path, or http://host/path without a user name.',
    );
  }
  request.headers.host = named.authority;
  return named.authority;
}

function rateLimited(limiter: RateLimiter, resetAt: number): HttpError {
  const seconds = Math.max(1, Math.ceil((resetAt - Date.now()) / 1000));
  return new HttpError(
    'rate-limited',
    `This client sent more than ${limiter.limit} requests in a minute; retry in ${seconds} s.`,
    { headers: { 'retry-after': String(seconds) } },
  );
}
