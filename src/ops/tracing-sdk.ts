// The OpenTelemetry SDK's packages, which startTracing (tracing.ts) imports with this module only
// when traces are on. Imported here as a whole, not each with its own import(): a bundle (esbuild)
// gives a CommonJS package imported by import() only its `default`, where Node gives its named
// exports too; a namespace imported here has them both ways.
import * as api from '@opentelemetry/api';
import * as hooks from '@opentelemetry/context-async-hooks';
import * as core from '@opentelemetry/core';
import * as otlp from '@opentelemetry/exporter-trace-otlp-http';
import * as resources from '@opentelemetry/resources';
import * as base from '@opentelemetry/sdk-trace-base';
import * as semconv from '@opentelemetry/semantic-conventions';

export { api, base, core, hooks, otlp, resources, semconv };
