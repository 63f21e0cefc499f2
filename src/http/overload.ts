const TICK_MS = 50;
const MAX_SHED_MS = 1000;

/**
 * Whether the event loop runs late by more than `maxLagMs`: a timer measures how late its own tick
 * fires. Timers run before the loop reads new requests, so after a stall (a long GC pause, a CPU
 * starved by neighbours, a burst of work) the requests that queued up meanwhile are refused cheaply
 * instead of each waiting behind the others. Under lasting overload every tick is late, so
 * shedding lasts as long as the overload does. (@fastify/under-pressure averages the delay over its
 * sample window, which hides such a stall.)
 */
export class OverloadMonitor {
  readonly #maxLagMs: number;
  /** When the next tick is due; measured only once the server listens (start-up work is not overload). */
  #expected = Number.POSITIVE_INFINITY;
  /** After a late tick, requests are shed for about as long as the loop was late. */
  #shedUntil = 0;
  #lastLag = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(maxLagMs: number) {
    this.#maxLagMs = maxLagMs;
  }

  start(): void {
    if (this.#maxLagMs <= 0 || this.#timer !== undefined) return;
    this.#expected = performance.now() + TICK_MS;
    this.#timer = setInterval(() => {
      const now = performance.now();
      const lag = now - this.#expected;
      if (lag > this.#maxLagMs) {
        this.#shedUntil = now + Math.min(lag, MAX_SHED_MS);
        this.#lastLag = lag;
      }
      this.#expected = now + TICK_MS;
    }, TICK_MS);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** How late the loop runs now, in ms, when that is past the limit; undefined while it keeps up. */
  lag(): number | undefined {
    if (this.#maxLagMs <= 0) return undefined;
    const now = performance.now();
    // An overdue tick counts too: right after a stall, requests may be read before the timer runs.
    const overdue = now - this.#expected;
    if (overdue <= this.#maxLagMs && now >= this.#shedUntil) return undefined;
    return Math.max(overdue, this.#lastLag);
  }
}
