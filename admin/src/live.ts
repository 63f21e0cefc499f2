import { type Api, ApiError } from './api.ts';

/** One change from `GET /users/events`. */
export interface Change {
  id: string;
  type: 'user.created' | 'user.updated' | 'user.deleted';
  timestamp: string;
  data: { id: number; name: string; age: string; city: string };
}

export type LiveState = 'connecting' | 'live' | 'reconnecting' | 'busy' | 'off';

export interface LiveHandlers {
  change(change: Change): void;
  /** `detail`: for `busy`, the seconds until the next try. */
  state(state: LiveState, detail?: number): void;
  /** The stream could not go on from the last change seen (410): the page must read again. */
  restarted(): void;
  /** The token was refused (401/403): the page must ask for one. */
  refused(error: ApiError): void;
}

/** A stream that stayed open this long was a working one: the next loss starts the waits afresh. */
const STEADY_MS = 10_000;

/** Waits after a lost stream: 0.5 s, doubling to 30 s, with jitter so pages do not come back at once. */
function backoff(attempt: number): number {
  const base = Math.min(30_000, 500 * 2 ** attempt);
  return base / 2 + Math.random() * (base / 2);
}

const TYPES = new Set(['user.created', 'user.updated', 'user.deleted']);

/** The change an event's data names, or undefined for anything else (a proxy's, or a future type). */
function changeOf(id: string, data: string): Change | undefined {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return undefined;
  }
  const event = value as Partial<Change> | null;
  const record = event?.data;
  if (typeof event?.type !== 'string' || !TYPES.has(event.type) || typeof event.timestamp !== 'string')
    return undefined;
  if (typeof record !== 'object' || record === null || !Number.isSafeInteger(record.id)) return undefined;
  return { id, type: event.type, timestamp: event.timestamp, data: record };
}

interface Event {
  id: string;
  data: string;
}

/**
 * The Server-Sent Events in a byte stream, one at a time. The opening comment `: changes after N`
 * says where the stream starts, which `onStart` is told: a resume from there misses nothing even
 * before the first change arrives.
 */
async function* events(body: ReadableStream<Uint8Array>, onStart: (id: string) => void): AsyncGenerator<Event> {
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
      } else if (line.startsWith(':')) {
        const start = /^: changes after (\d+)$/.exec(line)?.[1];
        if (start !== undefined) onStart(start);
      } else {
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        const text = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') id = text;
        else if (field === 'data') data.push(text);
      }
    }
  }
}

/** Waits `ms`, or less when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * Follows the change stream until `signal` aborts, through the typed client (so the token goes as
 * a header, which EventSource cannot send). A lost stream is followed again from the last change
 * seen, or from where the stream said it started (Last-Event-ID), so no change is missed; one the
 * log no longer has (410) starts afresh. An event the page cannot read is passed over.
 */
export async function follow(api: Api, handlers: LiveHandlers, signal: AbortSignal): Promise<void> {
  let lastId: string | undefined;
  let attempt = 0;
  while (!signal.aborted) {
    handlers.state(attempt === 0 ? 'connecting' : 'reconnecting');
    let wait = 0;
    const opened = Date.now();
    try {
      const body = await api.events(lastId, signal);
      handlers.state('live');
      for await (const event of events(body, (start) => (lastId ??= start))) {
        // An event without an id keeps the last one (as EventSource does).
        if (event.id !== '') lastId = event.id;
        const change = changeOf(event.id, event.data);
        if (change === undefined) continue;
        // Only a change the page could read shows the stream works: then the waits start afresh.
        attempt = 0;
        handlers.change(change);
      }
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
        handlers.state('off');
        handlers.refused(error);
        return;
      }
      if (error instanceof ApiError && error.status === 410) {
        lastId = undefined;
        handlers.restarted();
      }
      if (error instanceof ApiError && (error.status === 429 || error.status === 503)) {
        wait = (error.retryAfter ?? 5) * 1000;
        handlers.state('busy', Math.ceil(wait / 1000));
      }
    }
    if (signal.aborted) return;
    if (Date.now() - opened >= STEADY_MS) attempt = 0;
    if (wait === 0) handlers.state('reconnecting');
    await pause(Math.max(wait, backoff(attempt++)), signal);
  }
}
