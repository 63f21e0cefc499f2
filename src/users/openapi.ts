import type { TSchema } from 'typebox';
import { NDJSON_TYPE } from '../http/body-parsers.ts';

/** What the /users routes share in their OpenAPI description. */
export const TAGS = ['users'];
export const ETAG = {
  ETag: 'Opaque, compared whole; it names one content for the life of the database, a restore included. A record: `"<id>-<version>.<fingerprint>"`, the fingerprint a hash of all it stores. A listing: the change version in its history, `"v<n>.<history>"` (weak while streamed), or for a page a hash of its body, Link and count. Counts by group: a hash of the body and X-Total-Count. Use it with If-None-Match or If-Match.',
};
export const NOT_MODIFIED = {
  304: {
    description: 'Not modified: If-None-Match matched the current ETag.',
    type: 'null',
    headers: { ETag: { type: 'string', description: 'The current ETag, the one that matched.' } },
  },
};
export const FORMS = ['application/json', 'application/x-www-form-urlencoded'];

/** The listing's 200 with its other formats beside JSON (listing-formats.ts), each a text body. */
export function withListingFormats(response: TSchema): TSchema {
  const { content } = response as unknown as { content: Record<string, unknown> };
  content['text/csv'] = {
    schema: {
      type: 'string',
      description:
        "RFC 4180, CRLF line ends: a header row of the fields (as `fields` asks, in their order), then a row per record with the values the JSON shows; a value that starts like a spreadsheet formula (`=`, `+`, `-`, `@`, a tab or a carriage return) gets a leading `'`.",
      example: 'name,age,city\r\nAlice,30,Paris\r\n',
    },
  };
  content[NDJSON_TYPE] = {
    schema: {
      type: 'string',
      description: 'One JSON object a line (LF-ended), each record as the JSON listing shows it, no envelope.',
      example: '{"name":"Alice","age":"30","city":"Paris"}\n',
    },
  };
  return response;
}
