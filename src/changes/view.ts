import { listMatcher } from '../store/list-match.ts';
import type { Change, ListFilter } from '../store/store.ts';
import { type EventType, eventType, sseEvent } from './event.ts';

/**
 * What a client that follows only the records a listing's filter matches sees of the changes: a
 * creation or a deletion of a matching record as it is; an update when the record matches after it
 * (`user.updated`, whether it matched before or came into the view), or `user.left` when it matched
 * before and no longer does; nothing of records that match neither before nor after.
 */
export class ChangeView {
  /** The filter, written the same for the same filter (parseListing builds it in a fixed order). */
  readonly key: string;
  readonly #matches: ReturnType<typeof listMatcher>;

  constructor(filter: ListFilter) {
    this.key = JSON.stringify(filter);
    this.#matches = listMatcher(filter);
  }

  /** The event a change is in this view, or undefined when the view does not see it. */
  typeOf(change: Change): EventType | undefined {
    if (this.#matches(change.user)) return eventType(change);
    if (change.kind !== 'updated') return undefined;
    // An update logged before the log kept the record as it was (schema version 10) is said to have
    // left: a client drops the record if it holds it, which is right whether it matched or not.
    return change.before === undefined || this.#matches(change.before) ? 'user.left' : undefined;
  }
}

/** A batch's events in one view: their bytes, and how many events they are. */
export interface ViewBatch {
  bytes: Buffer;
  count: number;
  /** The id of the last of them (none without events). */
  lastId: number | undefined;
}

/** Each batch's events per view, encoded once for every stream with the same filter (kept while the batch is). */
const encoded = new WeakMap<readonly Change[], Map<string, ViewBatch>>();

/** The events a batch of changes is in a view, as Server-Sent Events (ids are the change versions). */
export function viewBatch(changes: readonly Change[], view: ChangeView): ViewBatch {
  let views = encoded.get(changes);
  if (views === undefined) {
    views = new Map();
    encoded.set(changes, views);
  }
  let batch = views.get(view.key);
  if (batch === undefined) {
    let text = '';
    let count = 0;
    let lastId: number | undefined;
    for (const change of changes) {
      const type = view.typeOf(change);
      if (type === undefined) continue;
      text += sseEvent(change, type);
      count++;
      lastId = change.version;
    }
    batch = { bytes: Buffer.from(text), count, lastId };
    views.set(view.key, batch);
  }
  return batch;
}
