import type { FastifyRequest } from 'fastify';

/**
 * What a route needs from the request path, declared on the route when it is registered
 * (`config: { policy: { public: true } }`) rather than looked up per request in lists kept
 * elsewhere. A route that declares nothing, and a path no route matches, get the defaults: a
 * token when tokens are configured, shed when overloaded, counted by the rate limit.
 */
export interface RoutePolicy {
  /** Anyone may call it, even with tokens configured (health, the docs): it holds no data. */
  public?: boolean;
  /** Still answered when the service is overloaded (liveness must not fail for being busy). */
  shed?: boolean;
  /** Counted by the per-client rate limit (probes and scrapers are not: they come from few addresses). */
  rateLimited?: boolean;
  /** The Content-Security-Policy of an HTML page it serves; JSON answers allow nothing. */
  pageCsp?: string;
}

/** Route options' `config` with a policy. */
export interface PolicyConfig {
  policy?: RoutePolicy;
}

const DEFAULT: Readonly<Required<Omit<RoutePolicy, 'pageCsp'>>> = { public: false, shed: true, rateLimited: true };

/** A route's policy with what the request path needs to know of the route, resolved once per route. */
export interface ResolvedPolicy {
  public: boolean;
  shed: boolean;
  rateLimited: boolean;
  pageCsp: string | undefined;
  /** The route pattern (`/users/:id`), or undefined when no route matched. */
  route: string | undefined;
  /** Whether the route checks its query with a schema (which then reports the query's own faults). */
  querySchema: boolean;
}

const cache = new WeakMap<object, ResolvedPolicy>();
const UNMATCHED: ResolvedPolicy = { ...DEFAULT, pageCsp: undefined, route: undefined, querySchema: false };

/**
 * The policy of the route a request matched (defaults for none), resolved once per route and kept
 * on the request: Fastify builds `request.routeOptions` anew at each access, so it is read once.
 */
export function policyOf(request: FastifyRequest): ResolvedPolicy {
  if (request.policy) return request.policy;
  // A request refused before routing (an undecodable URL) has no route to read.
  let options: FastifyRequest['routeOptions'];
  try {
    options = request.routeOptions;
  } catch {
    return UNMATCHED;
  }
  const config = options.config as (PolicyConfig & { url?: string }) | undefined;
  let resolved = config === undefined ? UNMATCHED : cache.get(config);
  if (resolved === undefined && config !== undefined) {
    resolved = {
      ...DEFAULT,
      pageCsp: undefined,
      ...config.policy,
      route: config.url,
      querySchema: options.schema?.querystring !== undefined,
    };
    cache.set(config, resolved);
  }
  request.policy = resolved ?? UNMATCHED;
  return request.policy;
}

/** Makes room for the policy on every request (call once, before any hook reads it). */
export function decoratePolicy(app: { decorateRequest(name: string, value: null): unknown }): void {
  app.decorateRequest('policy', null);
}

/** A route's config with its policy, for route options. */
export function withPolicy(policy: RoutePolicy): { config: PolicyConfig } {
  return { config: { policy } };
}

declare module 'fastify' {
  interface FastifyContextConfig {
    policy?: RoutePolicy;
  }
  interface FastifyRequest {
    /** The matched route's policy, once policyOf has resolved it for this request. */
    policy: ResolvedPolicy | null | undefined;
  }
}
