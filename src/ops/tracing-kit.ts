import type * as Api from '@opentelemetry/api';
import type * as Semconv from '@opentelemetry/semantic-conventions';

/**
 * What the span makers share: the API, this service's tracer and the attribute names. Types only:
 * the modules themselves are loaded by tracing.ts, when traces are on.
 */
export interface TracingKit {
  api: typeof Api;
  tracer: Api.Tracer;
  semconv: typeof Semconv;
}
