import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Counter } from 'prom-client';
import { allowOnly } from '../http/methods.ts';
import { HttpError, PROBLEM_CONTENT_TYPE } from '../http/problem.ts';
import { ProblemSchema, problemResponses } from '../http/schemas.ts';
import { type Change, narrows, type UserStore } from '../store/store.ts';
import { normalizeInput } from '../users/input.ts';
import { TAGS } from '../users/openapi.ts';
import { parseListing } from '../users/query.ts';
import type { ListQuery } from '../users/schemas.ts';
import { type ChangeFeed, LogMoved } from './feed.ts';
import { EVENT_ID_PATTERN, EVENT_RULES, EventsHeaders, EventsQuery } from './schemas.ts';
import { type EndReason, StreamFollower } from './stream-follower.ts';
import { StreamPlaces, streamClient } from './stream-places.ts';
import { ChangeView } from './view.ts';

export const EVENT_STREAM_TYPE = 'text/event-stream; charset=utf-8';

/**
 * The most one stream may hold unsent for a client that reads too slowly (about five thousand
 * events), however few streams share the memory for them; past its share, the stream is ended and
 * the client resumes with Last-Event-ID.
 */
export const STREAM_BUFFER_BYTES = 1024 * 1024;

/** How long a browser's EventSource waits before it reconnects after the stream ends. */
const RETRY_MS = 2000;

/** Seconds a refused client is told to wait (Retry-After): about the time a place takes to free. */
const RETRY_AFTER_S = '5';

export interface StreamOptions {
  maxSubscribers: number;
  maxSubscribersPerClient: number;
  /** What all streams together may hold for clients that have not taken it (EVENTS_BUFFER_MB). */
  bufferBytes: number;
  heartbeatMs: number;
  /** Tokens are on: a client is its address and its token. */
  byToken: boolean;
  /** Counts the events sent. */
  sent: Pick<Counter, 'inc'>;
  /** Counts a stream the service ended, by why. */
  ended: (reason: EndReason) => void;
}

const KEEP_ALIVE = ': keep-alive\n\n';

const EVENT_ID = new RegExp(EVENT_ID_PATTERN);

/** The version a client resumes after: `Last-Event-ID`, else `after`, else none (from now on). */
function resumeAfter(header: string | string[] | undefined, after: string | undefined): number | undefined {
  const value = Array.isArray(header) ? header.at(-1) : header;
  if (value !== undefined && value.trim() !== '') {
    const text = value.trim();
    if (!EVENT_ID.test(text)) {
      throw new HttpError('invalid-input', 'The Last-Event-ID header is not an event id.', {
        errors: [{ parameter: 'Last-Event-ID', detail: `must be ${EVENT_RULES.eventId}` }],
      });
    }
    return Number(text);
  }
  return after === undefined ? undefined : Number(after);
}

/**
 * `GET /users/events`: every change as a Server-Sent Event, from the change log and then live, in
 * change-version order, each once. `Last-Event-ID` (or `after`) resumes after that version; an id the
 * log no longer covers answers 410. A slow reader is ended once it holds more than its share of
 * `bufferBytes` (the total divided among the open streams, at most STREAM_BUFFER_BYTES).
 */
export function registerEventStream(
  app: FastifyInstance,
  store: UserStore,
  feed: ChangeFeed,
  options: StreamOptions,
): { open(): number; endAll(why: string): void } {
  const places = new StreamPlaces(options.maxSubscribers, options.maxSubscribersPerClient);
  const open = new Set<StreamFollower>();
  const share = () => Math.min(STREAM_BUFFER_BYTES, Math.floor(options.bufferBytes / Math.max(1, places.held)));
  let heartbeat: NodeJS.Timeout | undefined;
  const beat = () => {
    for (const follower of open) follower.heartbeat(KEEP_ALIVE);
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
      // The filters' values are brought into shape as the listing's are (text trimmed).
      preValidation: normalizeInput,
      schema: {
        tags: TAGS,
        operationId: 'streamUserEvents',
        summary: 'Follow every change as it happens, or the changes of the records a filter matches',
        description:
          'A `text/event-stream` of every change to the records, in change-version order: `id:` the change version, `event:` `user.created`, `user.updated` or `user.deleted`, `data:` the same JSON as a webhook body (for a deletion, the record as it was). Reconnecting with `Last-Event-ID` (browsers do so themselves) or `?after=` gets every change after that id first, with no gap and no repeat. An idle stream gets a comment line every `EVENTS_HEARTBEAT_MS`; a client that reads too slowly is ended with a comment saying to reconnect. A client may hold `MAX_SUBSCRIBERS_PER_CLIENT` streams at once (429 past it). The stream never ends by itself, so this page cannot show it: follow it with `curl -N` or an `EventSource`. See docs/changes.md.\n\n' +
          "**Filtered** with the listing's filters (`?city=Paris&age.gte=18`, `q`...; the same rules and the same 400s as `GET /users`): only the changes of records that match before or after the change. A creation or deletion of a matching record, as above; an update after which the record matches is `user.updated` (it may have just come into the view); an update after which a record that matched no longer does is `user.left`, with the record as it is now (drop it from the view). Ids stay the change versions, so a filtered stream skips ids; its heartbeat carries the id of the last change it looked at (`id:` with no data: no event fires, but `Last-Event-ID` moves), so a reconnection resumes from there. `sort`, `limit`, `cursor` and `fields` are the listing's only (400).",
        querystring: EventsQuery,
        headers: EventsHeaders,
        response: {
          200: {
            description:
              'The stream; it stays open. Each event is `id`, `event` and `data` lines; lines starting with `:` are comments.',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
          ...problemResponses(400, 410, 500, 503),
          429: {
            description:
              'This client already holds MAX_SUBSCRIBERS_PER_CLIENT streams (`/problems/too-many-streams`), or sent more requests this minute than RATE_LIMIT allows; retry after Retry-After seconds.',
            content: { [PROBLEM_CONTENT_TYPE]: { schema: ProblemSchema } },
          },
        },
      },
    },
    async (request, reply) => {
      const { after, ...filters } = request.query;
      const requested = resumeAfter(request.headers['last-event-id'], after);
      // The listing's own parser, so a filter means here what it means to GET /users.
      const { filter } = parseListing(filters as ListQuery);
      const view = narrows(filter) ? new ChangeView(filter) : undefined;
      // Taken before the first read, so streams being admitted count against the limits too.
      const place = places.take(streamClient(request.ip, request.headers.authorization, options.byToken));
      if (place === 'client') {
        throw new HttpError(
          'too-many-streams',
          `This client already has ${places.perClient} event streams open (MAX_SUBSCRIBERS_PER_CLIENT); close one, or retry later.`,
          { headers: { 'retry-after': RETRY_AFTER_S } },
        );
      }
      if (place === 'process') {
        throw new HttpError(
          'unavailable',
          `This process already serves ${places.max} event streams (MAX_SUBSCRIBERS); retry later.`,
          { headers: { 'retry-after': RETRY_AFTER_S } },
        );
      }
      let from: number;
      try {
        const log = await store.changes(0, 0);
        from = requested ?? log.version;
        // Without an id the stream starts from now, whatever the floor: after a restore to an older
        // moment the floor stays above the restored version (ids of the old history up to its last
        // version must answer 410), and a new follower must still be able to start.
        if (requested !== undefined && (from < log.floor || from > log.version)) {
          throw new HttpError(
            'event-id-expired',
            from > log.version
              ? `Event ${from} is ahead of this database (now at ${log.version}): list the records again, then follow from now.`
              : `The changes after event ${from} are no longer kept (the log starts after ${log.floor}): list the records again, then follow from now.`,
          );
        }
      } catch (error) {
        place();
        throw error;
      }
      // The client may have gone while the log was read (a round trip to PostgreSQL): the listeners
      // that give the place back are not there yet, so it is given back here.
      const socket = request.raw.socket;
      if (socket.destroyed || socket.readableEnded) {
        place();
        return reply.send('');
      }
      reply.header('cache-control', 'no-store').header('x-accel-buffering', 'no').type(EVENT_STREAM_TYPE);
      if (request.method === 'HEAD') {
        place();
        return reply.send('');
      }

      const raw = reply.raw;
      const follower: StreamFollower = new StreamFollower(from, {
        socketBuffer: () => raw.writableLength,
        bytesWritten: () => socket.bytesWritten,
        share,
        sent: (count) => options.sent.inc(count),
        onEnd: (reason, unread) => {
          feed.leave(follower);
          if (reason === undefined) return;
          options.ended(reason);
          const fields = { remoteAddress: request.ip, reason, unread, share: share() };
          if (reason === 'slow') request.log.warn(fields, 'event stream ended: the client reads too slowly');
          else request.log.info(fields, 'event stream ended');
        },
        close: () => raw.destroy(),
        graceMs: options.heartbeatMs,
        view,
      });
      open.add(follower);
      heartbeat ??= setInterval(beat, options.heartbeatMs).unref();
      // The place is held until the connection closes (an ended stream's last bytes may still wait
      // in it), or until the client leaves. The service keeps a connection whose client ended its side
      // open (for clients that send a request and then close, as nc does): for a stream, that end is
      // the client leaving, seen at once rather than at the next write that fails.
      const leave = () => {
        socket.off('end', leave);
        open.delete(follower);
        follower.closed();
        place();
      };
      raw.once('close', leave);
      socket.once('end', leave);
      follower.write(`retry: ${RETRY_MS}\n: changes after ${from}\n\n`);

      const catchUp = async (changes: readonly Change[]) => {
        follower.take(changes);
        await follower.room();
      };
      feed.follow(follower, catchUp).catch((error: unknown) => {
        if (error instanceof LogMoved) {
          follower.end('the change log no longer holds these changes: list again, then follow from now', 'log-moved');
        } else follower.end('the database is unavailable: reconnect with Last-Event-ID', 'unavailable');
      });
      // The stream is the body; the route's schema describes its text.
      return reply.send(follower.body as unknown as string);
    },
  );
  allowOnly(app, '/users/events', ['GET']);
  return {
    open: () => places.held,
    endAll: (why) => {
      for (const follower of open) follower.end(why);
    },
  };
}
