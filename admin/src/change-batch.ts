import type { Row } from './api.ts';
import type { SseEvent } from './sse.ts';

/** One change from `GET /users/events`. */
export interface Change {
  id: string;
  type: 'user.created' | 'user.updated' | 'user.deleted';
  timestamp: string;
  data: Row;
}

const TYPES = new Set(['user.created', 'user.updated', 'user.deleted']);

/** Whether an event's name may be a change (the service names each; unnamed is checked when read). */
export const mayBeChange = (type: string): boolean => type === '' || TYPES.has(type);

/** The change an event's data names, or undefined for anything else (a proxy's, or a future type). */
function changeOf(event: SseEvent): Change | undefined {
  let value: unknown;
  try {
    value = JSON.parse(event.data);
  } catch {
    return undefined;
  }
  const change = value as Partial<Change> | null;
  const record = change?.data;
  if (typeof change?.type !== 'string' || !TYPES.has(change.type) || typeof change.timestamp !== 'string')
    return undefined;
  if (typeof record !== 'object' || record === null || !Number.isSafeInteger(record.id)) return undefined;
  return { id: event.id, type: change.type, timestamp: change.timestamp, data: record };
}

/**
 * The changes that arrived in one interval, oldest first, as the stream gave them: each is read
 * (JSON.parse) only when asked for, so a burst of thousands costs the page what it shows of it.
 */
export class ChangeBatch {
  readonly #events: readonly SseEvent[];

  constructor(events: readonly SseEvent[]) {
    this.#events = events;
  }

  get count(): number {
    return this.#events.length;
  }

  /** Every change the page can read. */
  all(): Change[] {
    return this.#events.map(changeOf).filter((change) => change !== undefined);
  }

  /** The newest `n` changes the page can read, oldest first. */
  newest(n: number): Change[] {
    const found: Change[] = [];
    for (let i = this.#events.length - 1; i >= 0 && found.length < n; i--) {
      const change = changeOf(this.#events[i] as SseEvent);
      if (change !== undefined) found.push(change);
    }
    return found.reverse();
  }

  /** Whether record `id` was deleted by one of them: only the deletions are read. */
  deleted(id: number): boolean {
    return this.#events.some((event) => {
      if (event.type !== 'user.deleted' && event.type !== '') return false;
      const change = changeOf(event);
      return change?.type === 'user.deleted' && change.data.id === id;
    });
  }
}

/** The rows with these changes made: updated ones replaced, deleted ones gone (new ones come with a read). */
export function applyChanges(rows: readonly Row[], changes: readonly Change[]): Row[] {
  const latest = new Map<number, Change>();
  for (const change of changes) latest.set(change.data.id, change);
  const kept: Row[] = [];
  for (const row of rows) {
    const change = latest.get(row.id);
    if (change === undefined) kept.push(row);
    else if (change.type !== 'user.deleted') kept.push(change.data);
  }
  return kept;
}
