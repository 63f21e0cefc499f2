import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { refusedBeforeRouting } from '../http/errors.ts';
import { allowOnly } from '../http/methods.ts';
import { policyOf, withPolicy } from '../http/policy.ts';
import { HttpError } from '../http/problem.ts';
import { logLinesDropped } from '../logs/output.ts';
import type { UserStore } from '../store/store.ts';
import { inWorker, joinWorkerMetrics } from './cluster-metrics.ts';
import { asPromMetric, FastCounter, FastHistogram } from './counts.ts';
import { timedStore } from './timed-store.ts';

/** A request's route label when no route matched: one value, never the raw URL (it carries personal data). */
export const UNMATCHED_ROUTE = 'unmatched';

/** What the request path tells the metrics. */
export interface RequestMetrics {
  /** The store to hand to the routes: the given one, with each database call timed. */
  store: UserStore;
  /** Counts an answered request and its time, by method, route and status. */
  answered(request: FastifyRequest, reply: FastifyReply): void;
  /** Counts a request its client abandoned (a reset, a closed connection) before it was answered. */
  abandoned(): void;
  /** What the change stream and the webhooks count. */
  changes: ChangeMetrics;
}

export interface ChangeMetrics {
  /** Events sent on `GET /users/events` streams. */
  sent: Counter;
  /** Counts a stream the service ended, by why (`slow`: past its share of EVENTS_BUFFER_MB). */
  streamEnded(reason: string): void;
  /** Tells the metrics how to count the open streams. */
  countSubscribers(count: () => number): void;
  webhooks: { delivered(): void; retried(): void; failed(): void };
}

// A request here takes well under a millisecond to a few; a full listing or a slow disk takes
// seconds. The database calls beneath it start an order of magnitude lower.
const HTTP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const DB_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

// CPU, memory, event loop, GC, dropped log lines, early refusals: one set per process, shared by
// every app in it. Each set starts an event-loop delay monitor and a GC observer that nothing can
// stop, so one per app would pile up in tests that build many apps; the app's own metrics stay in a
// registry of its own.
let processRegistry: Registry | undefined;

function processMetrics(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
    processRegistry.registerMetric(logLinesDropped);
    processRegistry.registerMetric(refusedBeforeRouting);
  }
  return processRegistry;
}

/**
 * Prometheus metrics at `GET /metrics`: requests by method, route pattern and status, their latency,
 * database latency by operation, records stored, rate-limited and shed requests, and the process's
 * own. The request path reports each answer through `answered`.
 */
export function registerMetrics(app: FastifyInstance, store: UserStore): RequestMetrics {
  const registry = new Registry();
  // Counted on every request: kept cheap (counts.ts), read by the registry at scrape time.
  const requests = new FastCounter(
    'http_requests_total',
    'HTTP requests answered, by method, route pattern and status.',
    ['method', 'route', 'status'],
  );
  const requestDuration = new FastHistogram(
    'http_request_duration_seconds',
    'Time from receiving a request to sending its answer, by method and route pattern.',
    ['method', 'route'],
    HTTP_BUCKETS,
  );
  const dbDuration = new FastHistogram(
    'db_operation_duration_seconds',
    'Time the database took for each store operation, failed ones included.',
    ['operation'],
    DB_BUCKETS,
  );
  for (const metric of [requests, requestDuration, dbDuration]) registry.registerMetric(asPromMetric(metric));
  const rateLimited = new Counter({
    name: 'http_requests_rate_limited_total',
    help: 'Requests answered 429: over the rate limit, or over MAX_SUBSCRIBERS_PER_CLIENT event streams.',
    registers: [registry],
  });
  const shed = new Counter({
    name: 'http_requests_shed_total',
    help: 'Requests refused because the service was overloaded (answered 503).',
    registers: [registry],
  });
  const aborted = new Counter({
    name: 'http_requests_aborted_total',
    help: 'Requests whose client went away (a reset or a closed connection) before they were answered.',
    registers: [registry],
  });

  const stored: Gauge = new Gauge({
    name: 'user_records_stored',
    help: 'User records stored now, counted at scrape time.',
    // Every worker counts the same table: the service's figure is one count, not their sum.
    aggregator: 'max',
    registers: [registry],
    collect: async () => {
      const started = performance.now();
      try {
        stored.set(await store.count());
      } catch (error) {
        // The last count stands; failing the scrape would hide every other metric when they matter.
        app.log.warn({ err: error }, 'metrics: could not count the stored records');
      } finally {
        countTime.observe((performance.now() - started) / 1000);
      }
    },
  });

  const countTime = dbDuration.child('count');
  // One child per method, route and status, made once.
  const children = new Map<string, { count: { inc(): void }; time: { observe(value: number): void } }>();
  const answered = (request: FastifyRequest, reply: FastifyReply) => {
    const method = request.method;
    const route = policyOf(request).route ?? UNMATCHED_ROUTE;
    const status = reply.statusCode;
    const key = `${method} ${status} ${route}`;
    let child = children.get(key);
    if (child === undefined) {
      child = { count: requests.child(method, route, String(status)), time: requestDuration.child(method, route) };
      children.set(key, child);
    }
    child.count.inc();
    child.time.observe(reply.elapsedTime / 1000);
    if (status === 429) rateLimited.inc();
  };
  // onError sees the error as thrown, before the error handler turns it into a 503 like any other.
  app.addHook('onError', async (_request, _reply, error) => {
    if (error instanceof HttpError && error.code === 'overloaded') shed.inc();
  });

  // Registered before the merge below, which copies the registry's metrics as they are then.
  const changes = changeMetrics(registry);
  const local = Registry.merge([processMetrics(), registry]);
  const worker = inWorker() ? joinWorkerMetrics(local) : undefined;
  app.addHook('onClose', async () => worker?.leave());

  // Scrapers come from few addresses and must see an overloaded service too: not shed, not rate
  // limited (failed authentication still counts against a client's budget).
  const policy = { shed: false, rateLimited: false };
  app.get(
    '/metrics',
    // Hidden: this route is added before the OpenAPI plugin, which lists only routes added after it;
    // and it is an operations endpoint for Prometheus, not part of the API.
    { ...withPolicy(policy), schema: { hide: true } },
    async (request, reply) => {
      let text: string;
      try {
        text = worker === undefined ? await local.metrics() : await worker.scrape();
      } catch (error) {
        request.log.warn({ err: error }, 'metrics: could not gather every worker');
        throw new HttpError('unavailable', 'The metrics of every worker could not be gathered; retry.', {
          headers: { 'retry-after': '1' },
        });
      }
      return reply.type(local.contentType).header('cache-control', 'no-store').send(text);
    },
  );
  allowOnly(app, '/metrics', ['GET'], policy);

  return {
    store: timedStore(store, (operation) => dbDuration.child(operation)),
    answered,
    abandoned: () => aborted.inc(),
    changes,
  };
}

function changeMetrics(registry: Registry): ChangeMetrics {
  let subscribers = () => 0;
  const open: Gauge = new Gauge({
    name: 'user_records_event_subscribers',
    help: 'Open GET /users/events streams.',
    registers: [registry],
    collect: () => open.set(subscribers()),
  });
  const sent = new Counter({
    name: 'user_records_events_sent_total',
    help: 'Events sent on GET /users/events streams.',
    registers: [registry],
  });
  const ended = new Counter({
    name: 'user_records_event_streams_ended_total',
    help: 'GET /users/events streams the service ended, by reason: slow (the client left more than its share of EVENTS_BUFFER_MB unread), log-moved (a restore or retention), unavailable (the database failed while it caught up).',
    labelNames: ['reason'],
    registers: [registry],
  });
  // Shown from the start, so a rate over it has a first sample.
  ended.labels('slow').inc(0);
  const deliveries = new Counter({
    name: 'user_records_webhook_deliveries_total',
    help: 'Webhook attempts by outcome: delivered (2xx), retried (failed, to be tried again), failed (given up on after 24 hours).',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const delivered = deliveries.labels('delivered');
  const retried = deliveries.labels('retried');
  const failed = deliveries.labels('failed');
  return {
    sent,
    streamEnded: (reason) => ended.labels(reason).inc(),
    countSubscribers: (count) => {
      subscribers = count;
    },
    webhooks: { delivered: () => delivered.inc(), retried: () => retried.inc(), failed: () => failed.inc() },
  };
}
