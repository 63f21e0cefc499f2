import type { Change, UserStore } from '../store/store.ts';
import { nextTurn } from '../shared/next-turn.ts';

/** Changes read from the log at a time by the feed. */
export const PAGE = 500;

/**
 * Changes read at a time by a follower catching up. Each page waits its turn (nextTurn), one page
 * per turn of the event loop however many followers catch up at once (all of them after a
 * restart, say), so other requests wait for one page at most.
 */
const CATCH_UP_PAGE = 100;

/** One follower of the feed: given every change after its position, once, in version order. */
export interface Follower {
  /** The last version it was given. */
  readonly last: number;
  /** Whether it has ended (it is then neither read for nor attached). */
  readonly ended: boolean;
  /** Takes these changes (those at or below `last` are skipped by the follower). */
  take(changes: readonly Change[]): void;
  /** The log was reset under it (a restore) or the store went away: it must end. */
  end(why: string): void;
}

/**
 * This process's view of the change log: one position, moved forward by this store's own commits
 * (handed over as they commit, without reading anything) and by the log, read when another process
 * may have committed (the store's `watch`). Each change is handed to every follower once, in
 * version order, from one read however many follow; a follower that starts behind reads its own
 * way up to the position first (`catchUp`).
 */
export class ChangeFeed {
  readonly #store: UserStore;
  readonly #followers = new Set<Follower>();
  /** The last version handed out; undefined until the first follower comes. */
  #position: number | undefined;
  /** The history the position counts in (a restore starts another). */
  #history = '';
  #stopWatch: (() => void) | undefined;
  #reading = false;
  #again = false;

  constructor(store: UserStore) {
    this.#store = store;
    store.onCommit((commit) => this.#committed(commit.changes));
  }

  get followers(): number {
    return this.#followers.size;
  }

  /** The version the feed has handed out up to; starts watching the log on first use. */
  async position(): Promise<number> {
    if (this.#position === undefined) {
      const { version, history } = await this.#store.changes(0, 0);
      if (this.#position === undefined) {
        this.#position = version;
        this.#history = history;
      }
      this.#stopWatch ??= this.#store.watch(() => this.wake());
    }
    return this.#position;
  }

  /**
   * Brings `follower` up to the feed's position from the log, then attaches it. The last step is
   * synchronous, so no change falls between the pages it read and those the feed hands it.
   * Rejects (LogMoved) when the log no longer holds what it needs: a gap, or another history.
   */
  async follow(follower: Follower, send: (changes: readonly Change[]) => Promise<void>): Promise<void> {
    await this.position();
    const history = this.#history;
    while (!follower.ended) {
      await nextTurn();
      if (follower.ended) return;
      if (this.#history !== history) throw new LogMoved(0, 0);
      // Compared with the position as it is now, in the same step as the attach.
      if (follower.last >= (this.#position as number)) {
        this.#followers.add(follower);
        return;
      }
      const page = await this.#store.changes(follower.last, CATCH_UP_PAGE);
      const first = page.changes[0];
      if (
        page.history !== history ||
        page.version < follower.last ||
        (first !== undefined && first.version !== follower.last + 1)
      ) {
        throw new LogMoved(page.floor, page.version);
      }
      if (page.changes.length === 0) {
        // The feed is ahead of what this read saw (a commit a moment later): read again.
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      await send(page.changes);
    }
  }

  leave(follower: Follower): void {
    this.#followers.delete(follower);
  }

  /** Another process may have committed: reads the log from the position on. */
  wake(): void {
    if (this.#position === undefined) return;
    if (this.#reading) {
      this.#again = true;
      return;
    }
    void this.#read();
  }

  stop(): void {
    this.#stopWatch?.();
    this.#stopWatch = undefined;
    for (const follower of this.#followers) follower.end('the service is stopping');
    this.#followers.clear();
  }

  /** This store's own commit: handed out at once when it follows the position, else read from the log. */
  #committed(changes: readonly Change[]): void {
    if (this.#position === undefined) return;
    if (this.#reading || changes[0]?.version !== this.#position + 1) return this.wake();
    this.#handOut(changes);
  }

  #handOut(changes: readonly Change[]): void {
    const last = changes.at(-1);
    if (last === undefined) return;
    this.#position = last.version;
    for (const follower of this.#followers) follower.take(changes);
  }

  async #read(): Promise<void> {
    this.#reading = true;
    try {
      do {
        this.#again = false;
        for (;;) {
          const position = this.#position as number;
          const page = await this.#store.changes(position, PAGE);
          if (page.history !== this.#history) {
            // The log was replaced (a restore): every follower must start again from a listing.
            this.#position = page.version;
            this.#history = page.history;
            for (const follower of this.#followers) follower.end('the change log was reset by a restore');
            this.#followers.clear();
            break;
          }
          if (page.version < position) {
            // Not a restore (that starts a new history): a read in a snapshot older than a commit
            // handed out since (SQLite's reads of one turn share one). Read again in a later turn.
            this.#again = true;
            await new Promise((resolve) => setImmediate(resolve));
            break;
          }
          this.#handOut(page.changes.filter((change) => change.version > (this.#position as number)));
          if (page.changes.length < PAGE) break;
          // A poll for I/O before the next page, so the streams' sockets can take this one: a burst
          // from another process (an import) then reaches the clients that keep up, rather than
          // piling up past their share of EVENTS_BUFFER_MB at once. Not nextTurn: the feed is one
          // read for every follower and does not queue behind the followers catching up.
          await new Promise((resolve) => setImmediate(resolve));
        }
      } while (this.#again);
    } catch {
      // The database is unavailable: the next wake-up (a commit, or the watch's next look) tries again.
    } finally {
      this.#reading = false;
    }
  }
}

/** The log no longer holds the changes after a follower's position (retention, or a restore). */
export class LogMoved extends Error {
  override name = 'LogMoved';

  constructor(floor: number, version: number) {
    super(`the change log now starts after version ${floor} and ends at ${version}`);
  }
}
