import { Readable } from 'node:stream';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Counter } from 'prom-client';
import { HttpError } from '../http/problem.ts';
import { problemResponses } from '../http/schemas.ts';
import type { Change, UserStore } from '../store/store.ts';
import { TAGS } from '../users/openapi.ts';
import { EVENT_ID_PATTERN, EventsHeaders, EventsQuery, RULES } from '../users/schemas.ts';
import { sseEvent } from './event.ts';
import { type ChangeFeed, type Follower, LogMoved } from './feed.ts';

export const EVENT_STREAM_TYPE = 'text/event-stream; charset=utf-8';

/**
 * What a stream may hold unsent for a client that reads too slowly (about five thousand events);
 * past it the client is disconnected, to resume with Last-Event-ID, rather than held in memory.
 */
export const STREAM_BUFFER_BYTES = 1024 * 1024;

/** While catching up from the log, the next page is read once less than this is waiting to be sent. */
const CATCH_UP_BYTES = 64 * 1024;

/** How long a browser's EventSource waits before it reconnects after the stream ends. */
const RETRY_MS = 2000;

export interface StreamOptions {
  maxSubscribers: number;
  heartbeatMs: number;
  /** Counts the events sent. */
  sent: Pick<Counter, 'inc'>;
}

const EVENT_ID = new RegExp(EVENT_ID_PATTERN);

/** One client's stream: the events after `last`, written as they come. */
class StreamFollower implements Follower {
  last: number;
  readonly #body: Readable;
  readonly #socketBuffer: () => number;
  readonly #sent: StreamOptions['sent'];
  #ended = false;
  readonly #onEnd: () => void;
  readonly #log: FastifyBaseLogger;

  constructor(
    last: number,
    body: Readable,
    socketBuffer: () => number,
    sent: StreamOptions['sent'],
    onEnd: () => void,
    log: FastifyBaseLogger,
  ) {
    this.#log = log;
    this.last = last;
    this.#body = body;
    this.#socketBuffer = socketBuffer;
    this.#sent = sent;
    this.#onEnd = onEnd;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Bytes written but not yet taken by the client's connection. */
  buffered(): number {
    return this.#body.readableLength + this.#socketBuffer();
  }

  take(changes: readonly Change[]): void {
    if (this.#ended) return;
    let text = '';
    let count = 0;
    for (const change of changes) {
      if (change.version <= this.last) continue;
      text += sseEvent(change);
      this.last = change.version;
      count++;
    }
    if (count === 0) return;
    this.#body.push(text);
    this.#sent.inc(count);
    if (this.buffered() > STREAM_BUFFER_BYTES) this.end('the client reads too slowly', true);
  }

  comment(text: string): void {
    if (!this.#ended) this.#body.push(`: ${text}\n\n`);
  }

  /** Ends the stream: with a last comment saying why, or cut at once when the client does not read. */
  end(why: string, cut = false): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#onEnd();
    if (cut) {
      this.#log.warn({ why }, 'event stream: client disconnected');
      this.#body.destroy();
      return;
    }
    this.#body.push(`: ${why}\n\n`);
    this.#body.push(null);
  }
}

/** The version a client resumes after: `Last-Event-ID`, else `after`, else none (from now on). */
function resumeAfter(header: string | string[] | undefined, after: string | undefined): number | undefined {
  const value = Array.isArray(header) ? header.at(-1) : header;
  if (value !== undefined && value.trim() !== '') {
    const text = value.trim();
    if (!EVENT_ID.test(text)) {
      throw new HttpError('invalid-input', 'The Last-Event-ID header is not an event id.', {
        errors: [{ parameter: 'Last-Event-ID', detail: `must be ${RULES.eventId}` }],
      });
    }
    return Number(text);
  }
  return after === undefined ? undefined : Number(after);
}

/**
 * `GET /users/events`: every change as a Server-Sent Event, from the change log and then live, in
 * change-version order, each once. `Last-Event-ID` (or `after`) resumes after that version; an id the
 * log no longer covers answers 410. Slow readers are cut off once STREAM_BUFFER_BYTES wait for them.
 */
export function registerEventStream(
  app: FastifyInstance,
  store: UserStore,
  feed: ChangeFeed,
  options: StreamOptions,
): { open(): number } {
  const open = new Set<StreamFollower>();
  /** Streams admitted but not yet open (their first read is in flight): they count against the limit too. */
  let admitting = 0;
  let heartbeat: NodeJS.Timeout | undefined;
  const beat = () => {
    for (const follower of open) follower.comment('keep-alive');
  };

  // Streams never end by themselves: closing the service ends them, each with a last comment.
  app.addHook('preClose', (done) => {
    for (const follower of open) follower.end('the service is stopping');
    clearInterval(heartbeat);
    done();
  });
  app.addHook('onClose', (_instance, done) => {
    feed.stop();
    done();
  });

  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/users/events',
    {
      schema: {
        tags: TAGS,
        operationId: 'streamUserEvents',
        summary: 'Follow every change as it happens',
        description:
          'A `text/event-stream` of every change to the records, in change-version order: `id:` the change version, `event:` `user.created`, `user.updated` or `user.deleted`, `data:` the same JSON as a webhook body (for a deletion, the record as it was). Reconnecting with `Last-Event-ID` (browsers do so themselves) or `?after=` gets every change after that id first, with no gap and no repeat. An idle stream gets a comment line every `EVENTS_HEARTBEAT_MS`. The stream never ends, so this page cannot show it: follow it with `curl -N` or an `EventSource`. See docs/changes.md.',
        querystring: EventsQuery,
        headers: EventsHeaders,
        response: {
          200: {
            description:
              'The stream; it stays open. Each event is `id`, `event` and `data` lines; lines starting with `:` are comments.',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
          ...problemResponses(400, 410, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const requested = resumeAfter(request.headers['last-event-id'], request.query.after);
      if (open.size + admitting >= options.maxSubscribers) {
        throw new HttpError(
          'unavailable',
          `This process already serves ${open.size} event streams (MAX_SUBSCRIBERS); retry later.`,
          { headers: { 'retry-after': '5' } },
        );
      }
      admitting++;
      let log: Awaited<ReturnType<UserStore['changes']>>;
      try {
        log = await store.changes(0, 0);
      } finally {
        admitting--;
      }
      const from = requested ?? log.version;
      if (from < log.floor || from > log.version) {
        throw new HttpError(
          'event-id-expired',
          from > log.version
            ? `Event ${from} is ahead of this database (now at ${log.version}): list the records again, then follow from now.`
            : `The changes after event ${from} are no longer kept (the log starts after ${log.floor}): list the records again, then follow from now.`,
        );
      }
      reply.header('cache-control', 'no-store').header('x-accel-buffering', 'no').type(EVENT_STREAM_TYPE);
      if (request.method === 'HEAD') return reply.send('');

      const body = new Readable({ read() {} });
      const raw = reply.raw;
      const follower: StreamFollower = new StreamFollower(
        from,
        body,
        () => raw.writableLength,
        options.sent,
        () => {
          open.delete(follower);
          feed.leave(follower);
        },
        request.log,
      );
      open.add(follower);
      heartbeat ??= setInterval(beat, options.heartbeatMs).unref();
      request.raw.once('close', () => follower.end('closed'));
      raw.once('close', () => follower.end('closed'));
      // The service keeps a connection whose client ended its side open (for clients that send a
      // request and then close, as nc does): for a stream, that end is the client leaving, seen at
      // once rather than at the next write that fails, so its MAX_SUBSCRIBERS place is free again.
      request.raw.socket.once('end', () => follower.end('the client left', true));
      body.push(`retry: ${RETRY_MS}\n: changes after ${from}\n\n`);

      const catchUp = async (changes: readonly Change[]) => {
        follower.take(changes);
        while (!follower.ended && follower.buffered() > CATCH_UP_BYTES) {
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      };
      feed.follow(follower, catchUp).catch((error: unknown) => {
        follower.end(
          error instanceof LogMoved
            ? 'the change log no longer holds these changes: list again, then follow from now'
            : 'the database is unavailable: reconnect with Last-Event-ID',
        );
      });
      // The stream is the body; the route's schema describes its text.
      return reply.send(body as unknown as string);
    },
  );
  return { open: () => open.size };
}
