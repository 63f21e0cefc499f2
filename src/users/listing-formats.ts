import { negotiate } from '../http/accept.ts';
import { NDJSON_TYPE } from '../http/body-parsers.ts';
import { HttpError } from '../http/problem.ts';
import { csvLine, csvValues } from '../record/csv.ts';
import type { FieldName, User } from '../record/fields.ts';
import { recordJson } from '../record/json.ts';
import { JSON_TYPE } from './present.ts';

/**
 * A way `GET /users` writes its records, chosen by Accept. Every format is written page by page
 * (a page of the store, or the one page `limit` asks for): its head, each page's records, its tail.
 * The Link, count and ETag headers are the same in every format; only the body differs.
 */
export interface ListingFormat {
  /** The media type Accept names it by. */
  readonly media: string;
  /** The Content-Type of its answers. */
  readonly type: string;
  /** What its ETags end with, so that no two formats share a validator ('' for JSON: its tags are as they were). */
  readonly tag: string;
  head(fields: readonly FieldName[]): string;
  /** The records of one page; `first` when no page came before it. */
  page(users: readonly User[], fields: readonly FieldName[], first: boolean): string;
  readonly tail: string;
}

/** The default, and the original contract: `{"data":[...]}`. */
export const JSON_FORMAT: ListingFormat = {
  media: 'application/json',
  type: JSON_TYPE,
  tag: '',
  head: () => '{"data":[',
  page(users, fields, first) {
    let text = first ? '' : ',';
    for (let i = 0; i < users.length; i++) text += (i === 0 ? '' : ',') + recordJson(users[i] as User, fields);
    return text;
  },
  tail: ']}',
};

/**
 * RFC 4180 with a header row of the fields asked for, in their order; values as the JSON shows them,
 * made inert in a spreadsheet as the command line's export makes them (record/csv.ts: a value that
 * starts like a formula gets a leading `'`). NDJSON gives the values exactly as stored.
 */
export const CSV_FORMAT: ListingFormat = {
  media: 'text/csv',
  type: 'text/csv; charset=utf-8; header=present',
  tag: 'csv',
  head: (fields) => csvLine(fields),
  page(users, fields) {
    let text = '';
    for (const user of users) text += csvLine(csvValues(user, fields));
    return text;
  },
  tail: '',
};

/** One JSON object a line, each as the JSON listing shows it, no envelope. */
export const NDJSON_FORMAT: ListingFormat = {
  media: NDJSON_TYPE,
  type: `${NDJSON_TYPE}; charset=utf-8`,
  tag: 'ndjson',
  head: () => '',
  page(users, fields) {
    let text = '';
    for (const user of users) text += `${recordJson(user, fields)}\n`;
    return text;
  },
  tail: '',
};

const FORMATS = [JSON_FORMAT, CSV_FORMAT, NDJSON_FORMAT];
const OFFERS = FORMATS.map((format) => format.media);

/** The format an Accept header asks for (JSON on a tie: for the wildcard of every type, or no Accept); 406 when it accepts none. */
export function listingFormat(accept: string | undefined): ListingFormat {
  const media = negotiate(accept, OFFERS);
  const format = FORMATS.find((candidate) => candidate.media === media);
  if (format === undefined) {
    throw new HttpError(
      'not-acceptable',
      `GET /users answers ${OFFERS.join(', ')}; the Accept header takes none of them.`,
    );
  }
  return format;
}

/** An ETag for this format's answer: a JSON tag as it is, another's with the format named at its end. */
export function formatEtag(etag: string, format: ListingFormat): string {
  return format.tag === '' ? etag : `${etag.slice(0, -1)}-${format.tag}"`;
}

/** A whole page of records in this format (the answer of `limit`). */
export function pageBody(format: ListingFormat, users: readonly User[], fields: readonly FieldName[]): string {
  return format.head(fields) + format.page(users, fields, true) + format.tail;
}
