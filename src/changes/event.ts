import type { Change, ChangeKind } from '../store/store.ts';
import { EVENT_FIELDS } from '../record/fields.ts';
import { recordJson } from '../record/json.ts';

/**
 * The event of each kind of change, and `user.left`: a filtered stream's (or webhook's) word for an
 * update after which the record no longer matches the filter (view.ts). Unfiltered, never sent.
 */
export type EventType = `user.${ChangeKind}` | 'user.left';

export function eventType(change: Change): EventType {
  return `user.${change.kind}`;
}

/**
 * The one JSON form of a change, for the event stream's `data:` and each webhook's body:
 * `{"type":"user.created","timestamp":"<RFC 3339>","data":{"id":7,"name":"Ada","age":"36","city":"London"}}`.
 * `timestamp` is when the change was committed; for a deletion, `data` is the record as it was.
 */
export function eventJson(change: Change, type: EventType = eventType(change)): string {
  return `{"type":"${type}","timestamp":"${change.at.toISOString()}","data":${recordJson(change.user, EVENT_FIELDS)}}`;
}

/** One Server-Sent Event: the change version as its id, the type as its name, the JSON as its data. */
export function sseEvent(change: Change, type: EventType = eventType(change)): string {
  return `id: ${change.version}\nevent: ${type}\ndata: ${eventJson(change, type)}\n\n`;
}

/** Each batch's events, encoded once for every stream that is handed it (kept while the batch is). */
const encoded = new WeakMap<readonly Change[], Buffer>();

/**
 * The events of a batch as bytes. Every stream following the feed is handed the same batch, so
 * they all send (and, while their clients are slow, hold) one copy of it rather than one each.
 */
export function sseBatch(changes: readonly Change[]): Buffer {
  let bytes = encoded.get(changes);
  if (bytes === undefined) {
    bytes = Buffer.from(changes.map((change) => sseEvent(change)).join(''));
    encoded.set(changes, bytes);
  }
  return bytes;
}
