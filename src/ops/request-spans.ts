import type { Attributes, Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { hostName, validAuthority } from '../http/hosts.ts';
import { policyOf } from '../http/policy.ts';
import type { TracingKit } from './tracing-kit.ts';

/** The methods the semantic conventions name; any other is recorded as `_OTHER`. */
const KNOWN_METHODS = new Set([
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'TRACE',
  'CONNECT',
  'QUERY',
]);

/**
 * A server span for every request, named by method and route pattern (`GET /users/:id`), child of
 * the caller's span when the request carries a valid W3C `traceparent`. It records what the
 * HTTP semantic conventions ask for, except what can carry personal data: the path (`http.route`
 * has the pattern; the path may hold whatever a client put there, as the access log assumes), the
 * query, headers other than User-Agent, the client's address and any body. A 5xx answer is an
 * error; a 4xx is the client's, not the server's (the conventions for server spans).
 */
export function registerRequestSpans(app: FastifyInstance, kit: TracingKit): void {
  const { api, tracer, semconv: s } = kit;
  const open = new WeakMap<FastifyRequest, Span>();

  app.addHook('onRequest', (request, _reply, done) => {
    const parent = api.propagation.extract(api.ROOT_CONTEXT, request.headers);
    const route = policyOf(request).route;
    const method = KNOWN_METHODS.has(request.method) ? request.method : s.HTTP_REQUEST_METHOD_VALUE_OTHER;
    const attributes: Attributes = {
      [s.ATTR_HTTP_REQUEST_METHOD]: method,
      [s.ATTR_URL_SCHEME]: request.protocol,
      [s.ATTR_NETWORK_PROTOCOL_VERSION]: request.raw.httpVersion,
    };
    if (method !== request.method) attributes[s.ATTR_HTTP_REQUEST_METHOD_ORIGINAL] = request.method;
    if (route !== undefined) attributes[s.ATTR_HTTP_ROUTE] = route;
    const host = request.headers.host;
    // A Host that is not a host and port is refused by the gate (400); it is not recorded either.
    if (host !== undefined && validAuthority(host)) {
      attributes[s.ATTR_SERVER_ADDRESS] = hostName(host);
      const colon = host.lastIndexOf(':');
      if (colon > host.lastIndexOf(']') && colon < host.length - 1) {
        attributes[s.ATTR_SERVER_PORT] = Number(host.slice(colon + 1));
      }
    }
    const agent = request.headers['user-agent'];
    // Up to Node's header limit (16 KiB); OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT cuts it shorter.
    if (agent !== undefined) attributes[s.ATTR_USER_AGENT_ORIGINAL] = agent;
    const span = tracer.startSpan(
      route === undefined ? method : `${method} ${route}`,
      { kind: api.SpanKind.SERVER, attributes },
      parent,
    );
    open.set(request, span);
    // The rest of the request runs in this context: Fastify carries it across the reading of a body.
    api.context.with(api.trace.setSpan(parent, span), done);
  });
  app.addHook('onResponse', (request, reply, done) => {
    const span = open.get(request);
    if (span !== undefined) {
      open.delete(request);
      const status = reply.statusCode;
      span.setAttribute(s.ATTR_HTTP_RESPONSE_STATUS_CODE, status);
      if (status >= 500) {
        span.setAttribute(s.ATTR_ERROR_TYPE, String(status));
        span.setStatus({ code: api.SpanStatusCode.ERROR });
      }
      span.end();
    }
    done();
  });
  app.addHook('onRequestAbort', (request, done) => {
    const span = open.get(request);
    if (span !== undefined) {
      open.delete(request);
      // Not answered: no status code; the client went away, which is not the server's fault.
      span.setAttribute(s.ATTR_ERROR_TYPE, 'aborted');
      span.end();
    }
    done();
  });
}
