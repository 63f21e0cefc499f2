import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { type ListFilter, type ListOrder, sortValue, type User, type UserStore } from '../store/store.ts';
import { nextTurn } from '../shared/next-turn.ts';
import type { FieldName } from '../record/fields.ts';
import type { ListingFormat } from './listing-formats.ts';

/** Records read from the database at a time by a listing that streams. */
export const PAGE_SIZE = 1000;
export const HEAD = Buffer.from('{"data":[');
export const TAIL = Buffer.from(']}');

/**
 * The records a filter selects, in id order, a page at a time (keyset, so the last page costs what
 * the first does). Between pages the event loop gets a turn (nextTurn): SQLite reads are
 * synchronous, and a large listing would otherwise hold every other request until done.
 */
export async function* pages(
  store: UserStore,
  filter: Omit<ListFilter, 'limit'>,
  order?: ListOrder,
): AsyncGenerator<User[]> {
  let afterId = filter.afterId ?? 0;
  let after = order?.after;
  for (;;) {
    const page =
      order === undefined
        ? await store.list({ ...filter, afterId, limit: PAGE_SIZE })
        : await store.list({ ...filter, limit: PAGE_SIZE }, { sort: order.sort, after });
    if (page.length > 0) yield page;
    if (page.length < PAGE_SIZE) return;
    const last = page.at(-1) as User;
    afterId = last.id;
    after = { values: order?.sort.map((key) => sortValue(last, key.field)) ?? [], id: last.id };
    await nextTurn();
  }
}

/**
 * A listing without `limit` as the bytes of its answer in `format`, streamed page by page: memory
 * stays bounded whatever the number of records, and the first bytes leave after one page.
 */
async function* listingBytes(
  store: UserStore,
  filter: Omit<ListFilter, 'limit'>,
  order: ListOrder | undefined,
  fields: readonly FieldName[],
  format: ListingFormat,
): AsyncGenerator<Buffer> {
  let first = true;
  for await (const page of pages(store, filter, order)) {
    const text = (first ? format.head(fields) : '') + format.page(page, fields, first);
    first = false;
    yield Buffer.from(text);
  }
  const end = (first ? format.head(fields) : '') + format.tail;
  if (end !== '') yield Buffer.from(end);
}

/**
 * The body of a listing without `limit`, its first page already read: a listing that fails at once
 * (given up past the time limit, the database away) is answered with its problem, not with a 200 cut
 * short. A later page that fails still ends the answer early, as the status has gone out.
 */
export async function listingStream(
  store: UserStore,
  filter: Omit<ListFilter, 'limit'>,
  order: ListOrder | undefined,
  fields: readonly FieldName[],
  format: ListingFormat,
): Promise<Readable> {
  const bytes = listingBytes(store, filter, order, fields, format);
  const first = await bytes.next();
  async function* whole(): AsyncGenerator<Buffer> {
    if (first.done !== true) yield first.value;
    yield* bytes;
  }
  return Readable.from(whole(), { highWaterMark: 1 });
}

/**
 * The ETag of a listing by the change version it shows, `"v<version>.<history>"`: a version names
 * one state of the records only within its history, and a restore, which may set the version back,
 * begins a new one.
 */
export function versionEtag(position: { version: number; history: string }, weak: boolean): string {
  return `${weak ? 'W/' : ''}"v${position.version}.${position.history}"`;
}

/**
 * The ETag of a streamed listing: weak, since pages are read one after another and a write between
 * them may show in the body; the change version it started from (in its history) and the query it
 * answers. A revalidation after any write fetches it again.
 */
export function streamedEtag(position: { version: number; history: string }, url: string): string {
  const query = url.slice(url.indexOf('?') + 1);
  const tag = versionEtag(position, true);
  return `${tag.slice(0, -1)}-${createHash('sha1').update(query).digest('base64url').slice(0, 12)}"`;
}
