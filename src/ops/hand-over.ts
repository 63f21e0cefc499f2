import { Server as NetServer } from 'node:net';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Lifecycle } from './health.ts';

/** How often the open connections are counted while they wind down. */
const POLL_MS = 50;

/**
 * While the process is draining, every answer says `Connection: close` (requests in flight when the
 * drain began too, as their answers are sent after it): the client, or the proxy in front, knows
 * before it sends anything more that this connection is done, and opens its next one elsewhere.
 */
export function closeConnectionsWhileDraining(app: FastifyInstance, lifecycle: Lifecycle): void {
  // A callback, not an async hook: it runs on every answer, and a promise each would cost more than it does.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (lifecycle.draining) reply.header('connection', 'close');
    done(null, payload);
  });
}

/**
 * The step of a stop that hands this process's clients over to the others without failing a request:
 * 1. stop listening, and nothing else: a proxy's new connections are refused, which it retries on
 *    another instance whatever the method (nothing was sent), and a worker gets no more connections
 *    from the primary. http.Server#close would also close the idle keep-alive connections at once,
 *    which races a request the client may be sending on one right then (a proxy does not retry a POST
 *    that met a closed connection);
 * 2. end the event streams, each with a comment; their clients reconnect (the stream sent `retry:`)
 *    and resume with Last-Event-ID on another process, missing nothing;
 * 3. wait for the connections to go: each busy one closes after its answer (Connection: close, above);
 *    an idle one is closed by its client (a proxy closes an idle upstream connection before
 *    KEEP_ALIVE_TIMEOUT_MS when configured as deploy/nginx/ is), or else by this process's own
 *    keep-alive timeout, just as it would be at any other time. Bounded by `waitMs`; what is left is
 *    closed by the stop that follows (Fastify's close ends idle connections, waits for busy ones).
 */
export async function handOver(
  app: FastifyInstance,
  lifecycle: Lifecycle,
  waitMs: number,
  log: FastifyBaseLogger,
): Promise<void> {
  NetServer.prototype.close.call(app.server);
  lifecycle.endStreams?.();
  const open = await connections(app);
  log.info({ connections: open }, 'stopped taking connections; open ones close after their answers');
  const deadline = Date.now() + waitMs;
  let left = open;
  while (left > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    left = await connections(app);
  }
  if (left > 0) log.warn({ connections: left }, 'connections still open after the hand-over; closing them');
  else log.info('every connection closed');
}

function connections(app: FastifyInstance): Promise<number> {
  return new Promise((resolve) => app.server.getConnections((error, count) => resolve(error ? 0 : count)));
}
