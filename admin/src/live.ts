import { type Api, ApiError } from './api.ts';

/** One change from `GET /users/events`. */
export interface Change {
  id: string;
  type: 'user.created' | 'user.updated' | 'user.deleted';
  timestamp: string;
  data: { id: number; name: string; age: string; city: string };
}

export type LiveState = 'connecting' | 'live' | 'reconnecting' | 'off';

export interface LiveHandlers {
  change(change: Change): void;
  state(state: LiveState, detail?: string): void;
  /** The stream could not go on from the last change seen (410): the page must read again. */
  restarted(): void;
  /** The token was refused (401/403): the page must ask for one. */
  refused(error: ApiError): void;
}

/** Waits after a lost stream: 0.5 s, doubling to 10 s, with jitter so pages do not come back at once. */
function backoff(attempt: number): number {
  const base = Math.min(10_000, 500 * 2 ** attempt);
  return base / 2 + Math.random() * (base / 2);
}

/** The Server-Sent Events in a byte stream, one parsed event at a time (comments skipped). */
async function* events(body: ReadableStream<Uint8Array>): AsyncGenerator<{ id: string; data: string }> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let id = '';
  let data: string[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.search(/\r\n|\r|\n/)) !== -1) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer.startsWith('\r\n', end) ? 2 : 1));
      if (line === '') {
        if (data.length > 0) yield { id, data: data.join('\n') };
        data = [];
      } else if (!line.startsWith(':')) {
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        const text = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') id = text;
        else if (field === 'data') data.push(text);
      }
    }
  }
}

/**
 * Follows the change stream until `signal` aborts, through the typed client (so the token goes as
 * a header, which EventSource cannot send). A lost stream is followed again from the last change
 * seen (Last-Event-ID), so no change is missed; one the log no longer has (410) starts afresh.
 */
export async function follow(api: Api, handlers: LiveHandlers, signal: AbortSignal): Promise<void> {
  let lastId: string | undefined;
  let attempt = 0;
  while (!signal.aborted) {
    handlers.state(attempt === 0 ? 'connecting' : 'reconnecting');
    try {
      const body = await api.events(lastId, signal);
      handlers.state('live');
      attempt = 0;
      for await (const event of events(body)) {
        const change = { id: event.id, ...(JSON.parse(event.data) as Omit<Change, 'id'>) };
        lastId = event.id;
        handlers.change(change);
      }
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
        handlers.state('off', error.message);
        handlers.refused(error);
        return;
      }
      if (error instanceof ApiError && error.status === 410) {
        lastId = undefined;
        handlers.restarted();
      }
    }
    if (signal.aborted) return;
    handlers.state('reconnecting');
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, backoff(attempt++));
      signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}
