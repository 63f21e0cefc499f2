/**
 * The layers of the request path, in the order the price list adds them (bench/layered-server.ts
 * runs the service with the first n on). Each row of the price list is one more layer.
 */
export const LAYERS = [
  'the route alone (a record from memory)',
  '+ security headers',
  '+ metrics and timing',
  '+ access log (to a file)',
  '+ limits and shedding',
  '+ authentication (a bearer token)',
  '+ the store read (SQLite)',
  '+ traces (OTLP to a receiver that discards)',
] as const;
