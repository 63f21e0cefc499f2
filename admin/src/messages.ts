import { ApiError, Unreachable } from './api.ts';

/** What went wrong, in a sentence for the person using the page. */
export function describe(error: unknown): string {
  if (error instanceof Unreachable) return error.message;
  if (error instanceof ApiError) {
    if (error.status === 429 || error.status === 503) {
      const why = error.status === 429 ? 'Too many requests from this browser' : 'The service is busy';
      return `${why}: try again in ${error.retryAfter ?? 1} second${error.retryAfter === 1 ? '' : 's'}.`;
    }
    const errors = error.problem.errors ?? [];
    if (errors.length === 0) return error.message;
    return `${error.message} ${errors.map((fault) => `${fault.parameter} ${fault.detail}`).join('; ')}.`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** Whether the answer asks for a token (none, or a wrong one). */
export const needsToken = (error: unknown): error is ApiError => error instanceof ApiError && error.status === 401;

/** Whether the token may only read. */
export const readOnly = (error: unknown): error is ApiError => error instanceof ApiError && error.status === 403;

/** A write whose answer never came, or came 503: it may have been stored. */
export function mayHaveStored(error: unknown): boolean {
  return error instanceof Unreachable || (error instanceof ApiError && error.status === 503);
}
