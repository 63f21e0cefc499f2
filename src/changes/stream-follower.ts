import { Readable } from 'node:stream';
import type { Change } from '../store/store.ts';
import { sseBatch } from './event.ts';
import type { Follower } from './feed.ts';
import { type ChangeView, viewBatch } from './view.ts';

/** At most this much of the queue is joined into one piece of the body (fewer, larger socket writes). */
const PIECE_BYTES = 16 * 1024;

/** Put in the queue's place of a piece moved into the body, so the queue no longer holds it. */
const TAKEN = Buffer.alloc(0);

/** Why the service ended a stream, as counted in /metrics. */
export type EndReason = 'slow' | 'log-moved' | 'unavailable';

export interface FollowerOptions {
  /** Bytes written to the connection but not yet taken by the client's socket. */
  socketBuffer: () => number;
  /** Bytes the connection has handed to the kernel so far: unchanged while the client takes nothing. */
  bytesWritten: () => number;
  /** What this stream may leave unread now: its share of the memory for all streams. */
  share: () => number;
  /** Counts the events sent. */
  sent: (count: number) => void;
  /** The stream will take no more events (called once, before the last comment is written). */
  onEnd: (reason: EndReason | undefined, unread: number) => void;
  /** Closes the connection (an ended stream whose client takes nothing more). */
  close: () => void;
  /** How long an ended stream's client has to take what is left before its connection is closed. */
  graceMs: number;
  /** Only the changes this filter's view sees (view.ts); every change without one. */
  view?: ChangeView;
}

/**
 * One client's stream: the events after `last`. They wait in a queue of pieces (the batches as the
 * feed encoded them, shared by every stream) and move into `body` only as fast as the connection
 * takes them, so a stream that ends can drop what its client never took.
 */
export class StreamFollower implements Follower {
  last: number;
  readonly body: Readable;
  readonly #options: FollowerOptions;
  #queue: Buffer[] = [];
  /** The first piece of the queue not yet moved into the body. */
  #head = 0;
  #queued = 0;
  /** The body asked for more when the queue was empty: the next piece goes straight in. */
  #wanted = false;
  #ended = false;
  #grace: NodeJS.Timeout | undefined;
  #onRoom: (() => void) | undefined;
  /** bytesWritten at the last heartbeat. */
  #writtenAtBeat = -1;
  /** The last id the client was given (by an event, or by a filtered stream's heartbeat). */
  #idGiven: number;

  constructor(last: number, options: FollowerOptions) {
    this.last = last;
    this.#idGiven = last;
    this.#options = options;
    this.body = new Readable({ read: () => this.#pull() });
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Bytes this stream holds that its client has not taken (beyond what the kernel holds). */
  buffered(): number {
    return this.#queued + this.body.readableLength + this.#options.socketBuffer();
  }

  /**
   * Queues the changes after `last`. A stream that still holds more than its share when more come is
   * ended instead: the client resumes with Last-Event-ID, and reads what it missed from the log.
   */
  take(changes: readonly Change[]): void {
    if (this.#ended) return;
    // Followers of the feed are handed only changes after `last`; the filter is for safety.
    const fresh =
      (changes[0]?.version ?? Infinity) > this.last ? changes : changes.filter((c) => c.version > this.last);
    const newest = fresh.at(-1);
    if (newest === undefined) return;
    const view = this.#options.view;
    const batch =
      view === undefined
        ? { bytes: sseBatch(fresh), count: fresh.length, lastId: newest.version }
        : viewBatch(fresh, view);
    if (batch.count > 0 && this.buffered() > this.#options.share()) {
      this.end('this client reads too slowly: reconnect with Last-Event-ID', 'slow');
      return;
    }
    // A filtered stream moves past the changes its view does not see, sending nothing for them.
    this.last = newest.version;
    if (batch.count === 0) return;
    this.#idGiven = batch.lastId ?? this.#idGiven;
    this.#enqueue(batch.bytes);
    this.#options.sent(batch.count);
  }

  /**
   * A heartbeat comment. A stream whose client took nothing since the last heartbeat while events
   * waited for it is ended instead: one stuck while catching up (whose next page waits for room)
   * is never handed the changes that would end it by its share.
   */
  heartbeat(text: string): void {
    if (this.#ended) return;
    const written = this.#options.bytesWritten();
    if (written === this.#writtenAtBeat && this.#queued + this.body.readableLength > 0) {
      this.end('this client reads too slowly: reconnect with Last-Event-ID', 'slow');
      return;
    }
    this.#writtenAtBeat = written;
    // A filtered stream's heartbeat also gives the id of the last change it looked at: a field with
    // no data, which EventSource keeps as its Last-Event-ID without firing an event, so a client
    // whose view saw nothing for a while resumes from here rather than from its last event.
    if (this.#options.view !== undefined && this.last !== this.#idGiven) {
      this.#idGiven = this.last;
      this.write(`id: ${this.last}\n${text}`);
    } else this.write(text);
  }

  /** Queues text (a comment, a field) after what is queued; nothing once the stream ended. */
  write(text: string): void {
    if (!this.#ended) this.#enqueue(Buffer.from(text));
  }

  /** Resolves once the client has taken everything queued (or the stream ended): room for the next page. */
  room(): Promise<void> {
    if (this.#ended || this.#queued === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#onRoom = resolve;
    });
  }

  /**
   * Ends the stream with a last comment saying why; what was queued and not yet taken is dropped
   * (its events follow on resumption). A client that does not take the rest within `graceMs` is
   * closed, so a client that never reads holds its connection no longer.
   */
  end(why: string, reason?: EndReason): void {
    if (this.#ended) return;
    this.#stop(reason);
    this.body.push(`: ${why}\n\n`);
    this.body.push(null);
    this.#grace = setTimeout(this.#options.close, this.#options.graceMs).unref();
  }

  /** The client left: nothing more is written. */
  cut(): void {
    if (!this.#ended) this.#stop(undefined);
    this.body.destroy();
  }

  /** The connection closed: nothing of this stream is held any longer. */
  closed(): void {
    this.cut();
    clearTimeout(this.#grace);
  }

  #stop(reason: EndReason | undefined): void {
    const unread = this.buffered();
    this.#ended = true;
    this.#queue = [];
    this.#head = 0;
    this.#queued = 0;
    this.#options.onEnd(reason, unread);
    this.#room();
  }

  #enqueue(piece: Buffer): void {
    this.#queue.push(piece);
    this.#queued += piece.length;
    if (this.#wanted) this.#pull();
  }

  /** Moves queued pieces into the body until it wants no more (or the queue is empty). */
  #pull(): void {
    this.#wanted = false;
    while (this.#head < this.#queue.length) {
      let end = this.#head + 1;
      let size = (this.#queue[this.#head] as Buffer).length;
      while (end < this.#queue.length && size + (this.#queue[end] as Buffer).length <= PIECE_BYTES) {
        size += (this.#queue[end] as Buffer).length;
        end++;
      }
      const piece =
        end === this.#head + 1
          ? (this.#queue[this.#head] as Buffer)
          : Buffer.concat(this.#queue.slice(this.#head, end));
      this.#queue.fill(TAKEN, this.#head, end);
      this.#head = end;
      this.#queued -= size;
      // The array itself is cut down once most of it is behind the head.
      if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
        this.#queue = this.#queue.slice(this.#head);
        this.#head = 0;
      }
      if (!this.body.push(piece)) return;
    }
    this.#queue = [];
    this.#head = 0;
    this.#wanted = true;
    this.#room();
  }

  #room(): void {
    const resolve = this.#onRoom;
    this.#onRoom = undefined;
    resolve?.();
  }
}
