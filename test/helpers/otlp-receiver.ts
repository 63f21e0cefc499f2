import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as wait } from 'node:timers/promises';

/** One span as an OTLP/HTTP JSON export carries it, its attributes and its resource's flattened. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Absent for a trace's root. */
  parentSpanId?: string;
  name: string;
  /** OTLP's SpanKind: 2 server, 3 client. */
  kind: number;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  status: number;
  attributes: Record<string, string | number | boolean>;
  resource: Record<string, string | number | boolean>;
}

export const SERVER = 2;
export const CLIENT = 3;
export const ERROR = 2;

type AnyValue = { stringValue?: string; intValue?: number | string; boolValue?: boolean; doubleValue?: number };
type KeyValue = { key: string; value: AnyValue };
interface ExportRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: Array<{
      spans?: Array<{
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        status?: { code?: number };
        attributes?: KeyValue[];
      }>;
    }>;
  }>;
}

function flat(attributes: KeyValue[] = []): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of attributes) {
    const v = value.stringValue ?? value.boolValue ?? value.doubleValue ?? value.intValue;
    if (v !== undefined) out[key] = typeof v === 'string' && value.intValue !== undefined ? Number(v) : v;
  }
  return out;
}

/**
 * An OTLP/HTTP receiver (a collector's part that matters here) on 127.0.0.1: it takes JSON exports
 * at /v1/traces and keeps every span, every raw body (to search for what must not be there) and
 * the headers each export came with.
 */
export async function startOtlpReceiver() {
  const state = {
    url: '',
    spans: [] as ReceivedSpan[],
    bodies: [] as string[],
    headers: [] as IncomingHttpHeaders[],
    /** Paths and content types that were not a JSON export to /v1/traces. */
    refused: [] as string[],
  };
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      if (req.url !== '/v1/traces' || req.headers['content-type'] !== 'application/json') {
        state.refused.push(`${req.url} ${req.headers['content-type']}`);
        res.writeHead(415).end();
        return;
      }
      state.bodies.push(body);
      state.headers.push(req.headers);
      for (const resourceSpans of (JSON.parse(body) as ExportRequest).resourceSpans ?? []) {
        const resource = flat(resourceSpans.resource?.attributes);
        for (const scope of resourceSpans.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            state.spans.push({
              traceId: span.traceId,
              spanId: span.spanId,
              ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
              name: span.name,
              kind: span.kind,
              status: span.status?.code ?? 0,
              attributes: flat(span.attributes),
              resource,
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(state, {
    /** The spans received so far that `match`; waits (up to 60 s) until there are at least `count`. */
    async find(match: (span: ReceivedSpan) => boolean, count = 1): Promise<ReceivedSpan[]> {
      for (const until = Date.now() + 60_000; ;) {
        const found = state.spans.filter(match);
        if (found.length >= count || Date.now() > until) return found;
        await wait(50);
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
