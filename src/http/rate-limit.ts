import { isIPv6 } from 'node:net';

export interface Budget {
  /** Requests counted in this client's current window. */
  count: number;
  /** When the window ends (ms since the epoch). */
  resetAt: number;
}

/** Past this many clients at once the oldest windows are dropped, so a spread-out flood cannot grow memory without bound. */
const MAX_CLIENTS = 100_000;

/**
 * A fixed window per client address (IPv6 by /64, as one host often holds a whole /64): each client
 * may send `limit` requests in `windowMs` from its first one. Kept in this process's memory. Called
 * by the request gate, and also by the refusals made before any route runs (bad URL encoding,
 * unparsable HTTP) and by failed authentication, so none of those is free for a client.
 */
export class RateLimiter {
  readonly limit: number;
  readonly windowMs: number;
  readonly #limitText: string;
  readonly #clients = new Map<string, Budget>();
  readonly #sweeper: NodeJS.Timeout;

  constructor(limit: number, windowMs = 60_000) {
    this.limit = limit;
    this.#limitText = String(limit);
    this.windowMs = windowMs;
    this.#sweeper = setInterval(() => this.#sweep(), windowMs);
    this.#sweeper.unref();
  }

  /** Counts one request of the client at `address` and returns its budget after it. */
  hit(address: string | undefined, now = Date.now()): Budget {
    const key = clientKey(address);
    let budget = this.#clients.get(key);
    if (budget === undefined || budget.resetAt <= now) {
      if (budget === undefined && this.#clients.size >= MAX_CLIENTS) this.#dropOldest();
      budget = { count: 0, resetAt: now + this.windowMs };
      this.#clients.set(key, budget);
    }
    budget.count++;
    return budget;
  }

  /** Whether the client at `address` has used up its budget, without counting a request. */
  exhausted(address: string | undefined, now = Date.now()): Budget | undefined {
    const budget = this.#clients.get(clientKey(address));
    return budget !== undefined && budget.resetAt > now && budget.count > this.limit ? budget : undefined;
  }

  /** Sets the rate-limit headers of an answer to a client with this budget (Retry-After once it is over). */
  setHeaders(reply: { header(name: string, value: string): unknown }, budget: Budget, now = Date.now()): void {
    const reset = String(Math.max(0, Math.ceil((budget.resetAt - now) / 1000)));
    reply.header('ratelimit-limit', this.#limitText);
    reply.header('ratelimit-remaining', String(Math.max(0, this.limit - budget.count)));
    reply.header('ratelimit-reset', reset);
    if (budget.count > this.limit) reply.header('retry-after', reset);
  }

  close(): void {
    clearInterval(this.#sweeper);
  }

  #sweep(now = Date.now()): void {
    for (const [key, budget] of this.#clients) if (budget.resetAt <= now) this.#clients.delete(key);
  }

  #dropOldest(): void {
    const excess = Math.ceil(MAX_CLIENTS / 10);
    let dropped = 0;
    for (const key of this.#clients.keys()) {
      this.#clients.delete(key);
      if (++dropped >= excess) break;
    }
  }
}

/** The key of a client address: IPv4 as it is (also when mapped into IPv6), IPv6 by its /64. */
export function clientKey(address: string | undefined): string {
  if (address === undefined || address === '') return 'unknown';
  if (address.startsWith('::ffff:') && address.includes('.')) return address.slice('::ffff:'.length);
  if (!isIPv6(address)) return address;
  const [head = '', tail] = address.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, '').toLowerCase())
    .join(':')}::/64`;
}
