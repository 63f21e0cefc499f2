import { Readable } from 'node:stream';
import type { Commit, User, UserStore } from '../store/store.ts';

const PAGE_SIZE = 5000;
const HEAD = '{"data":[';
const TAIL = ']}';

/** A record as the default listing shows it (`name`, `age` as a string, `city`), serialized. */
function recordJson(user: User): string {
  return `{"name":${JSON.stringify(user.name)},"age":"${user.age}","city":${JSON.stringify(user.city)}}`;
}

/** The index of `id` in the ascending `ids`, or -1. */
function indexOf(ids: number[], id: number): number {
  let low = 0;
  let high = ids.length - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const value = ids[middle] as number;
    if (value === id) return middle;
    if (value < id) low = middle + 1;
    else high = middle - 1;
  }
  return -1;
}

export interface Listing {
  /** The store's change version the body shows. */
  version: number;
  body: Buffer | Readable;
}

/**
 * The original contract's busiest answer, `GET /users` with no parameters, kept serialized in
 * memory. This process's own commits keep it current; every request still compares it with the
 * database's change version, so a write by another worker or instance is never missed. When it is
 * missing or stale, the listing streams from the database page by page (the first bytes leave
 * after one page), and is kept if nothing changed while it streamed.
 */
export class FullListing {
  readonly #store: UserStore;
  /** The change version the records below show; -1 when there are none. */
  #version = -1;
  #ids: number[] = [];
  #json: string[] = [];
  #body: Buffer | undefined;
  #building = false;
  /** Set by any commit while a build streams: the build must not be kept. */
  #changedDuringBuild = false;

  constructor(store: UserStore) {
    this.#store = store;
    store.onCommit((commit) => this.#apply(commit));
  }

  async get(): Promise<Listing> {
    const version = await this.#store.version();
    // The records here are a whole state at least as new as the one the database just reported.
    if (this.#version >= version) return { version: this.#version, body: this.#wholeBody() };
    return { version, body: Readable.from(this.#stream(version)) };
  }

  #apply(commit: Commit): void {
    this.#changedDuringBuild = true;
    if (this.#version === -1) return;
    if (commit.version !== this.#version + 1) return this.#forget();
    for (const change of commit.changes) {
      const id = change.kind === 'put' ? change.user.id : change.id;
      const at = indexOf(this.#ids, id);
      if (change.kind === 'delete') {
        if (at !== -1) {
          this.#ids.splice(at, 1);
          this.#json.splice(at, 1);
        }
      } else if (at !== -1) {
        this.#json[at] = recordJson(change.user);
      } else if (id > (this.#ids.at(-1) ?? 0)) {
        this.#ids.push(id);
        this.#json.push(recordJson(change.user));
      } else {
        return this.#forget();
      }
    }
    this.#version = commit.version;
    this.#body = undefined;
  }

  #forget(): void {
    this.#version = -1;
    this.#ids = [];
    this.#json = [];
    this.#body = undefined;
  }

  #wholeBody(): Buffer {
    this.#body ??= Buffer.from(`${HEAD}${this.#json.join(',')}${TAIL}`);
    return this.#body;
  }

  async *#stream(version: number): AsyncGenerator<string> {
    // One build at a time is kept; other requests meanwhile stream without keeping.
    const keep = !this.#building;
    const ids: number[] = [];
    const json: string[] = [];
    if (keep) {
      this.#building = true;
      this.#changedDuringBuild = false;
    }
    try {
      yield HEAD;
      let afterId = 0;
      for (;;) {
        const page = await this.#store.list({ afterId, limit: PAGE_SIZE });
        const parts = page.map(recordJson);
        if (parts.length > 0) yield `${afterId === 0 ? '' : ','}${parts.join(',')}`;
        if (keep) {
          for (const user of page) ids.push(user.id);
          json.push(...parts);
        }
        if (page.length < PAGE_SIZE) break;
        afterId = (page.at(-1) as User).id;
      }
      yield TAIL;
      if (keep && !this.#changedDuringBuild && (await this.#store.version()) === version) {
        this.#version = version;
        this.#ids = ids;
        this.#json = json;
        this.#body = undefined;
      }
    } finally {
      if (keep) this.#building = false;
    }
  }
}
