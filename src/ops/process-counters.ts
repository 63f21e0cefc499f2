import { Counter } from 'prom-client';

// Counts kept per process rather than per app: what they count happens below any one app (the
// process's standard output, Node's HTTP parser). The metrics registry of the process shows them.

export const logLinesDropped = new Counter({
  name: 'log_lines_dropped_total',
  help: 'Log lines dropped because standard output was not read fast enough.',
  registers: [],
});

export const refusedBeforeRouting = new Counter({
  name: 'http_requests_refused_before_routing_total',
  help: 'Requests answered before any route saw them (unparsable HTTP, a slow request, an undecodable URL), by status.',
  labelNames: ['status'] as const,
  registers: [],
});
