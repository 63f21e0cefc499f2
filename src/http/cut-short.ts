import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';

/**
 * An answer that began (status 200 and headers sent, a listing streaming) and then met a fault of
 * ours, a damaged page of the database say: its body can only be cut short, which the client sees
 * as an incomplete answer. It must be logged as that fault, at error level with its cause, and
 * never as the client's doing ("aborted by the client") or as a 503 the client never got.
 */
const CUT_SHORT = Symbol('answer cut short');

type Marked = FastifyRequest & { [CUT_SHORT]?: true };

/** Whether the answer to `request` was cut short by a fault of the service. */
export const wasCutShort = (request: FastifyRequest): boolean => (request as Marked)[CUT_SHORT] === true;

/** Logs, once, that the answer to `request` was cut short by `error`. */
export function logCutShort(request: FastifyRequest, error: unknown): void {
  const marked = request as Marked;
  if (marked[CUT_SHORT] === true) return;
  marked[CUT_SHORT] = true;
  request.log.error({ err: error }, 'the answer was cut short after it began: the client gets an incomplete body');
}

/** True when the headers are gone: the error can no longer be answered as a problem. */
export const answerBegan = (reply: FastifyReply): boolean => reply.raw.headersSent;

/**
 * Fastify's log controller, but a stream that fails after its headers went out is logged (Fastify
 * says nothing of it with its request logging off, the service's own access log standing in).
 * A premature close is the client going away, logged by the abort hook.
 */
export class ServiceLogController extends LogController {
  override streamError(error: Error, request: FastifyRequest): void {
    if ((error as NodeJS.ErrnoException).code === 'ERR_STREAM_PREMATURE_CLOSE' || request.raw.destroyed) return;
    logCutShort(request, error);
  }
}
