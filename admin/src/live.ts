import { type Api, ApiError } from './api.ts';
import { ChangeBatch, mayBeChange } from './change-batch.ts';
import { type SseEvent, SseParser } from './sse.ts';

export type LiveState = 'connecting' | 'live' | 'reconnecting' | 'busy' | 'off';

export interface LiveHandlers {
  /** The changes of one interval (INTERVAL_MS), all at once: a burst costs one redraw per interval. */
  changes(batch: ChangeBatch): void;
  /** `detail`: for `busy`, the seconds until the next try. */
  state(state: LiveState, detail?: number): void;
  /** The stream could not go on from the last change seen (410): the page must read again. */
  restarted(): void;
  /** The token was refused (401/403): the page must ask for one. */
  refused(error: ApiError): void;
}

/**
 * Changes are handed to the page at most once per interval: a change after a quiet one at once, the
 * rest together when the interval ends. Reading the stream only queues them, so the page takes its
 * events as fast as the service sends them however many come at once (a client that reads too
 * slowly is cut off by the service, which holds at most 1 MiB for it).
 */
const INTERVAL_MS = 250;
/** Handed over as soon as this many wait: a hidden tab's timers may run late, and the queue stays small. */
const MAX_QUEUED = 20_000;

/** A stream that stayed open this long was a working one: the next loss starts the waits afresh. */
const STEADY_MS = 10_000;

/** Waits after a lost stream: 0.5 s, doubling to 30 s, with jitter so pages do not come back at once. */
function backoff(attempt: number): number {
  const base = Math.min(30_000, 500 * 2 ** attempt);
  return base / 2 + Math.random() * (base / 2);
}

/** Reads the stream to its end into `parser`, which only queues: a chunk costs one pass over its text. */
async function read(body: ReadableStream<Uint8Array>, parser: SseParser): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    parser.push(decoder.decode(value, { stream: true }));
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
  let queue: SseEvent[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** Hands the queue over, and starts an interval; an interval that ends with nothing queued ends the series. */
  const handOver = () => {
    clearTimeout(timer);
    timer = undefined;
    if (queue.length === 0 || signal.aborted) return;
    const batch = new ChangeBatch(queue);
    queue = [];
    timer = setTimeout(handOver, INTERVAL_MS);
    handlers.changes(batch);
  };
  signal.addEventListener('abort', () => clearTimeout(timer));
  const queued = (event: SseEvent) => {
    // An event without an id keeps the last one (as EventSource does).
    if (event.id !== '') lastId = event.id;
    if (!mayBeChange(event.type)) return;
    // A change shows the stream works: then the waits start afresh.
    attempt = 0;
    queue.push(event);
    if (timer === undefined || queue.length >= MAX_QUEUED) handOver();
  };
  const started = (comment: string) => {
    const start = /^changes after (\d+)$/.exec(comment)?.[1];
    if (start !== undefined) lastId ??= start;
  };
  while (!signal.aborted) {
    handlers.state(attempt === 0 ? 'connecting' : 'reconnecting');
    let wait = 0;
    const opened = Date.now();
    try {
      const body = await api.events(lastId, signal);
      handlers.state('live');
      await read(body, new SseParser(queued, started));
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
        handlers.state('off');
        handlers.refused(error);
        return;
      }
      if (error instanceof ApiError && error.status === 410) {
        lastId = undefined;
        // The changes seen before come first.
        handOver();
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
