import type { FastifyInstance } from 'fastify';
import { HttpError } from './problem.ts';

const TICK_MS = 50;
const MAX_SHED_MS = 1000;

/**
 * Sheds requests with 503 while the event loop runs late by more than `maxLagMs`. A timer measures
 * how late its own tick fires. Timers run before the loop reads new requests, so after a stall (a
 * long GC pause, a CPU starved by neighbours, a burst of work) the requests that queued up meanwhile
 * are refused cheaply instead of each waiting behind the others. Under lasting overload every tick
 * is late, so shedding lasts as long as the overload does.
 * (@fastify/under-pressure averages the delay over its sample window, which hides such a stall.)
 */
export function registerOverloadShedding(app: FastifyInstance, maxLagMs: number, exempt: ReadonlySet<string>): void {
  if (maxLagMs <= 0) return;
  // Measured from the moment the server listens: start-up work (opening the database, loading
  // modules) makes the loop late once and is not overload.
  let expected = Number.POSITIVE_INFINITY;
  // After a late tick, shed for about as long as the loop was late: the requests that queued up
  // meanwhile are the ones to turn away.
  let shedUntil = 0;
  let lastLag = 0;
  let timer: NodeJS.Timeout | undefined;
  app.addHook('onListen', async () => {
    expected = performance.now() + TICK_MS;
    timer = setInterval(() => {
      const now = performance.now();
      const lag = now - expected;
      if (lag > maxLagMs) {
        shedUntil = now + Math.min(lag, MAX_SHED_MS);
        lastLag = lag;
      }
      expected = now + TICK_MS;
    }, TICK_MS);
    timer.unref();
  });
  app.addHook('onClose', async () => clearInterval(timer));
  app.addHook('onRequest', async (request) => {
    const now = performance.now();
    // An overdue tick counts too: right after a stall, requests may be read before the timer runs.
    const overdue = now - expected;
    if ((overdue <= maxLagMs && now >= shedUntil) || exempt.has(request.routeOptions.url ?? '')) return;
    const lag = Math.max(overdue, lastLag);
    throw new HttpError(
      'overloaded',
      `The service is overloaded (its event loop ran ${Math.round(lag)} ms late); retry shortly.`,
      { headers: { 'retry-after': String(Math.max(1, Math.ceil(lag / 1000))) } },
    );
  });
}
