import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { VERSION } from '../config/version.ts';
import type { UserStore } from '../store/store.ts';
import { registerRequestSpans } from './request-spans.ts';
import { tracedStore } from './traced-store.ts';
import { deliverySpans } from './delivery-spans.ts';
import type { TracingKit } from './tracing-kit.ts';

/** Traces, once on: what the app, the store and the webhooks hand their work to. */
export interface Tracing {
  /** A server span for every request of `app` (its hooks), and the app's log for export faults. */
  register(app: FastifyInstance): void;
  /** The store with a child span for each call made inside a request or a delivery. */
  store(store: UserStore, system: 'sqlite' | 'postgresql'): UserStore;
  /** Spans of webhook delivery attempts. */
  deliveries: ReturnType<typeof deliverySpans>;
  /** Exports the spans still queued, for at most `ms`; then stops. */
  flush(ms: number): Promise<void>;
}

const isTrue = (value: string | undefined) => value?.trim().toLowerCase() === 'true';
const given = (value: string | undefined) => value !== undefined && value.trim() !== '';

/**
 * Whether the standard variables turn traces on: an OTLP endpoint for traces, and neither
 * OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none. Off, nothing of OpenTelemetry is loaded.
 */
export function tracingWanted(env: Readonly<Record<string, string | undefined>>): boolean {
  if (isTrue(env.OTEL_SDK_DISABLED) || env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return false;
  return given(env.OTEL_EXPORTER_OTLP_ENDPOINT) || given(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/** Export faults are logged at most this often: a collector that is down would otherwise fill the log. */
const FAULT_LOG_INTERVAL_MS = 60_000;

/**
 * Starts the OpenTelemetry SDK: W3C trace context, spans batched in the background (a bounded queue,
 * OTEL_BSP_*) to OTLP over HTTP as JSON. The SDK reads the rest of the OTEL_* variables itself (the
 * endpoint, headers, timeout, sampler, resource attributes). The packages are imported here, on
 * demand, so a service without traces never loads them.
 */
export async function startTracing(env: Readonly<Record<string, string | undefined>>): Promise<Tracing> {
  const { api, core, base, hooks, otlp, resources, semconv } = await import('./tracing-sdk.ts');
  // Until the app's log exists, what the SDK has to say waits here (a few lines at most).
  let log: FastifyBaseLogger | undefined;
  const early: string[] = [];
  const warn = (message: string) => (log === undefined ? early.length < 20 && early.push(message) : log.warn(message));
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL;
  if (protocol !== undefined && given(protocol) && protocol.trim() !== 'http/json') {
    warn(`traces: OTEL_EXPORTER_OTLP_PROTOCOL=${protocol.trim()} is not supported; spans are sent as http/json`);
  }
  const toLog = (message: string) => warn(`traces: ${message}`);
  api.diag.setLogger(
    { error: toLog, warn: toLog, info: () => {}, debug: () => {}, verbose: () => {} },
    api.DiagLogLevel.WARN,
  );
  let lastFault = -Infinity;
  core.setGlobalErrorHandler((error) => {
    if (Date.now() - lastFault < FAULT_LOG_INTERVAL_MS) return;
    lastFault = Date.now();
    warn(`traces: spans could not be exported (${(error as Error).message ?? String(error)}); going on without them`);
  });

  const resource = resources
    .defaultResource()
    .merge(
      resources.resourceFromAttributes({
        [semconv.ATTR_SERVICE_NAME]: 'user-records',
        [semconv.ATTR_SERVICE_VERSION]: VERSION,
      }),
    )
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the defaults above.
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new base.BasicTracerProvider({
    resource,
    spanProcessors: [new base.BatchSpanProcessor(new otlp.OTLPTraceExporter())],
  });
  const contextManager = new hooks.AsyncLocalStorageContextManager().enable();
  api.context.setGlobalContextManager(contextManager);
  api.propagation.setGlobalPropagator(new core.W3CTraceContextPropagator());
  api.trace.setGlobalTracerProvider(provider);
  const kit: TracingKit = { api, tracer: provider.getTracer('user-records', VERSION), semconv };

  return {
    register(app) {
      log = app.log;
      for (const message of early.splice(0)) log.warn(message);
      registerRequestSpans(app, kit);
    },
    store: (store, system) => tracedStore(store, kit, system),
    deliveries: deliverySpans(kit),
    async flush(ms) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, ms);
      });
      await Promise.race([provider.shutdown().catch(() => undefined), late]);
      clearTimeout(timer);
    },
  };
}
