import { Readable } from 'node:stream';
import type { Change, Commit, User, UserStore } from '../store/store.ts';
import { HEAD, PAGE_SIZE, pages, TAIL } from './listing.ts';
import { DEFAULT_FIELDS } from '../record/fields.ts';
import { recordJson } from '../record/json.ts';

/** Up to this size the kept listing is also held as one buffer, the fastest thing to send. */
const WHOLE_BODY_BYTES = 16 * 1024 * 1024;
/** How long a request waits for a build in progress before it streams the listing itself. */
const BUILD_WAIT_MS = 2000;
/** A record as the default listing shows it, with the comma that goes before it; the body drops the very first comma. */
function recordBytes(user: User): string {
  return `,${recordJson(user, DEFAULT_FIELDS)}`;
}

/** Up to PAGE_SIZE records in id order, as bytes, and where each one starts. */
interface Chunk {
  ids: number[];
  starts: number[];
  bytes: Buffer;
}

function chunkOf(ids: number[], parts: string[]): Chunk {
  const starts: number[] = [];
  let at = 0;
  for (const part of parts) {
    starts.push(at);
    at += Buffer.byteLength(part);
  }
  return { ids, starts, bytes: Buffer.from(parts.join('')) };
}

/** The records of a chunk as strings again, to change a few and rebuild it. */
function partsOf(chunk: Chunk): string[] {
  return chunk.starts.map((start, i) => chunk.bytes.toString('utf8', start, chunk.starts[i + 1] ?? chunk.bytes.length));
}

/** The index of the last element not above `id` in the ascending `values`, or -1. */
function floorIndex(values: number[], id: number): number {
  let low = 0;
  let high = values.length - 1;
  let found = -1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    if ((values[middle] as number) <= id) {
      found = middle;
      low = middle + 1;
    } else high = middle - 1;
  }
  return found;
}

export interface Listing {
  /** The store's change version the body shows (or, when not `exact`, started from). */
  version: number;
  /** The history that version counts in (a restore begins a new one, and may set the version back). */
  history: string;
  body: Buffer | Readable;
  /** The kept copy, exactly that version; a listing streamed from the database may show later writes too. */
  exact: boolean;
  /** How many records the kept copy holds (exact only): its count, of the very version it shows. */
  count?: number;
}

/**
 * The original contract's busiest answer, `GET /users` with no parameters, kept serialized in
 * memory as chunks of bytes (compact, and no per-record objects for the garbage collector to walk).
 * This process's own commits keep it current; every request still compares it with the database's
 * change version, so a write by another worker or instance is never missed. When it is missing or
 * stale, the listing streams from the database page by page (the first bytes leave after one
 * page) and is kept if nothing changed while it streamed.
 */
export class FullListing {
  readonly #store: UserStore;
  /** The most bytes of records kept; a larger listing streams from the database every time. */
  readonly #maxBytes: number;
  #bytes = 0;
  /** The change version the chunks show; -1 when there are none. */
  #version = -1;
  /** The history that version counts in: after a restore, a copy of the old one is not current. */
  #history = '';
  #chunks: Chunk[] = [];
  /** Records appended since the last chunk was sealed, in id order. */
  #tail: { ids: number[]; parts: string[] } = { ids: [], parts: [] };
  #body: Buffer | undefined;
  #building = false;
  /** Settles when the build in progress ends. */
  #built: Promise<void> = Promise.resolve();
  #buildEnded: () => void = () => undefined;
  /** Set by any commit while a build streams: the build must not be kept. */
  #changedDuringBuild = false;

  constructor(store: UserStore, maxBytes: number) {
    this.#store = store;
    this.#maxBytes = maxBytes;
    store.onCommit((commit) => this.#apply(commit));
  }

  async get(): Promise<Listing> {
    let position = await this.#store.position();
    // A restore (by the command line, while this runs) began another history: the copy is of the old.
    if (this.#version !== -1 && position.history !== this.#history) this.#forget();
    if (this.#version < position.version && this.#building) {
      // Many requests for a missing copy would each read the whole table; let one build it. A
      // build is paced by its own client, so a slow one is not waited for long.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.#built, new Promise((resolve) => (timer = setTimeout(resolve, BUILD_WAIT_MS)))]);
      clearTimeout(timer);
      position = await this.#store.position();
    }
    // The chunks hold a whole state at least as new as the one the database just reported.
    if (this.#version >= position.version && position.history === this.#history) {
      const body = this.#keptBody();
      return { version: this.#version, history: this.#history, body, exact: true, count: this.#count() };
    }
    const { version, history } = position;
    const body = Readable.from(this.#stream(version, history), { highWaterMark: 1 });
    return { version, history, body, exact: false };
  }

  #apply(commit: Commit): void {
    this.#changedDuringBuild = true;
    if (this.#version === -1) return;
    for (const change of commit.changes) {
      // A change of another process came between: the copy cannot be brought up to date.
      if (change.version !== this.#version + 1 || !this.#change(change)) return this.#forget();
      this.#version = change.version;
    }
    if (this.#bytes > this.#maxBytes) return this.#forget();
    this.#body = undefined;
  }

  /** Applies one change; false when it cannot be placed (the copy is then dropped). */
  #change(change: Change): boolean {
    const id = change.user.id;
    const put = change.kind !== 'deleted';
    if (put && id > this.#lastId()) {
      const part = recordBytes(change.user);
      this.#tail.ids.push(id);
      this.#tail.parts.push(part);
      this.#bytes += Buffer.byteLength(part);
      return true;
    }
    this.#seal();
    const at = floorIndex(
      this.#chunks.map((chunk) => chunk.ids[0] as number),
      id,
    );
    const chunk = this.#chunks[at];
    const index = chunk === undefined ? -1 : chunk.ids.indexOf(id);
    if (chunk === undefined || index === -1) return !put;
    const ids = [...chunk.ids];
    const parts = partsOf(chunk);
    if (put) parts[index] = recordBytes(change.user);
    else {
      ids.splice(index, 1);
      parts.splice(index, 1);
    }
    this.#bytes -= chunk.bytes.length;
    if (ids.length === 0) this.#chunks.splice(at, 1);
    else {
      const rebuilt = chunkOf(ids, parts);
      this.#chunks[at] = rebuilt;
      this.#bytes += rebuilt.bytes.length;
    }
    return true;
  }

  #count(): number {
    let count = this.#tail.ids.length;
    for (const chunk of this.#chunks) count += chunk.ids.length;
    return count;
  }

  #lastId(): number {
    return this.#tail.ids.at(-1) ?? this.#chunks.at(-1)?.ids.at(-1) ?? 0;
  }

  /** Moves appended records into chunks of at most PAGE_SIZE. */
  #seal(): void {
    const { ids, parts } = this.#tail;
    if (ids.length === 0) return;
    this.#tail = { ids: [], parts: [] };
    const last = this.#chunks.at(-1);
    if (last !== undefined && last.ids.length < PAGE_SIZE) {
      this.#chunks.pop();
      ids.unshift(...last.ids);
      parts.unshift(...partsOf(last));
    }
    for (let i = 0; i < ids.length; i += PAGE_SIZE) {
      this.#chunks.push(chunkOf(ids.slice(i, i + PAGE_SIZE), parts.slice(i, i + PAGE_SIZE)));
    }
  }

  #forget(): void {
    this.#version = -1;
    this.#chunks = [];
    this.#tail = { ids: [], parts: [] };
    this.#body = undefined;
    this.#bytes = 0;
  }

  /** The kept listing: one buffer while small, else its chunks in turn (no copy). */
  #keptBody(): Buffer | Readable {
    if (this.#body !== undefined) return this.#body;
    this.#seal();
    // Every record carries its leading comma; the first one's is dropped.
    const parts = [HEAD, ...this.#chunks.map((chunk, i) => (i === 0 ? chunk.bytes.subarray(1) : chunk.bytes)), TAIL];
    if (this.#bytes > WHOLE_BODY_BYTES) return Readable.from(parts);
    this.#body = Buffer.concat(parts);
    return this.#body;
  }

  async *#stream(version: number, history: string): AsyncGenerator<Buffer> {
    // One build at a time is kept; other requests meanwhile stream without keeping.
    let keep = !this.#building;
    const chunks: Chunk[] = [];
    let bytes = 0;
    if (keep) {
      this.#building = true;
      this.#changedDuringBuild = false;
      this.#built = new Promise((resolve) => (this.#buildEnded = resolve));
    }
    try {
      yield HEAD;
      let first = true;
      for await (const page of pages(this.#store, {})) {
        const chunk = chunkOf(
          page.map((user) => user.id),
          page.map(recordBytes),
        );
        yield first ? chunk.bytes.subarray(1) : chunk.bytes;
        first = false;
        bytes += chunk.bytes.length;
        if (keep && bytes <= this.#maxBytes) chunks.push(chunk);
        else if (keep) {
          // Too large to keep: stream every time instead.
          keep = false;
          chunks.length = 0;
          this.#endBuild();
        }
      }
      yield TAIL;
      const now = keep && !this.#changedDuringBuild ? await this.#store.position() : undefined;
      if (now !== undefined && now.version === version && now.history === history) {
        this.#forget();
        this.#version = version;
        this.#history = history;
        this.#chunks = chunks;
        this.#bytes = bytes;
      }
    } finally {
      if (keep) this.#endBuild();
    }
  }

  #endBuild(): void {
    this.#building = false;
    this.#buildEnded();
  }
}
