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

export interface ResolvedPolicy {
  public: boolean;
  shed: boolean;
  rateLimited: boolean;
  pageCsp: string | undefined;
}

const cache = new WeakMap<object, ResolvedPolicy>();
const UNMATCHED: ResolvedPolicy = { ...DEFAULT, pageCsp: undefined };

/** The policy of the route a request matched (defaults for none), resolved once per route. */
export function policyOf(request: FastifyRequest): ResolvedPolicy {
  const config = request.routeOptions.config as PolicyConfig | undefined;
  if (config === undefined) return UNMATCHED;
  let resolved = cache.get(config);
  if (resolved === undefined) {
    resolved = { ...DEFAULT, pageCsp: undefined, ...config.policy };
    cache.set(config, resolved);
  }
  return resolved;
}

/** A route's config with its policy, for route options. */
export function withPolicy(policy: RoutePolicy): { config: PolicyConfig } {
  return { config: { policy } };
}

declare module 'fastify' {
  interface FastifyContextConfig {
    policy?: RoutePolicy;
  }
}
