import type { TracingKit } from './tracing-kit.ts';

/**
 * A client span for each webhook delivery attempt (`POST`), the root of its own trace, whose W3C
 * `traceparent` goes with the POST so that the receiver's work joins it. It records the receiver's
 * host and port, the attempt, the answer's status or why there was none; never the URL's path or
 * query (a webhook URL often carries a secret) nor the body. Any answer but 2xx is an error.
 * Shaped as changes/webhooks.ts's DeliveryTracing asks.
 */
export function deliverySpans(kit: TracingKit) {
  const { api, tracer, semconv: s } = kit;
  return {
    attempt(url: string, id: string, attempt: number) {
      const target = new URL(url);
      const scheme = target.protocol.slice(0, -1);
      const span = tracer.startSpan(
        'POST',
        {
          kind: api.SpanKind.CLIENT,
          attributes: {
            [s.ATTR_HTTP_REQUEST_METHOD]: 'POST',
            [s.ATTR_URL_SCHEME]: scheme,
            [s.ATTR_SERVER_ADDRESS]: target.hostname,
            [s.ATTR_SERVER_PORT]: Number(target.port || (scheme === 'https' ? 443 : 80)),
            'webhook.id': id,
            ...(attempt > 1 ? { [s.ATTR_HTTP_REQUEST_RESEND_COUNT]: attempt - 1 } : {}),
          },
        },
        api.ROOT_CONTEXT,
      );
      const headers: Record<string, string> = {};
      api.propagation.inject(api.trace.setSpan(api.ROOT_CONTEXT, span), headers);
      return {
        headers,
        end(status: number | undefined, failure?: string) {
          if (status !== undefined) span.setAttribute(s.ATTR_HTTP_RESPONSE_STATUS_CODE, status);
          if (status === undefined || status < 200 || status > 299) {
            span.setAttribute(s.ATTR_ERROR_TYPE, failure ?? String(status));
            span.setStatus({ code: api.SpanStatusCode.ERROR });
          }
          span.end();
        },
      };
    },
  };
}
