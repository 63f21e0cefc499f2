import { STATUS_CODES } from 'node:http';
import { type TSchema, Type } from 'typebox';
import { fieldList, RECORD_FIELDS } from '../record/fields.ts';
import { PROBLEM_CONTENT_TYPE } from './problem.ts';

/** A rule in words as the start of a sentence. */
export function cap(rule: string): string {
  return rule.charAt(0).toUpperCase() + rule.slice(1);
}

/** How the document shows a number that is checked as text: an integer, to a client. */
export const integer = (minimum: number, maximum: number) => ({
  'x-document-as': { type: 'integer', minimum, maximum },
});

/** RFC 9457 problem details, the body of every error. */
export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: 'A stable problem type, e.g. /problems/invalid-input.' }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    errors: Type.Optional(
      Type.Array(
        Type.Object({
          parameter: Type.String({ description: 'The parameter at fault.' }),
          detail: Type.String({ description: 'What it must be.' }),
        }),
      ),
    ),
  },
  { title: 'Problem', description: 'RFC 9457 problem details.' },
);

export const ERROR_MEANINGS: Record<number, string> = {
  400: 'Invalid input (every bad parameter is listed in `errors`), a malformed body or an unsupported body type. Nothing was stored.',
  404: 'No record with that id, or an id that is not a positive integer.',
  405: 'The path does not serve this method; see the Allow header.',
  406: 'The Accept header accepts none of the media types this answer comes in; the problem is JSON whatever Accept said.',
  409: "A number the write needs is at its end (`/problems/range-exhausted`: a new id or the change version, or the record's version), or an Idempotency-Key was sent again after the record it created was deleted (`/problems/idempotency-key-record-deleted`); nothing was changed.",
  410: 'The change log no longer holds the changes after that event id (older than CHANGES_RETENTION, or from before a restore): list the records again, then follow the stream from now.',
  412: 'If-Match did not match the current ETag; nothing was changed.',
  413: 'The body is larger than 64 KiB (2 MiB for POST /users), or a batch has more than 1,000 records.',
  422: `The Idempotency-Key was already used with other input (another ${fieldList(RECORD_FIELDS, 'or')}, or another \`fields\`); nothing was stored.`,
  500: 'An internal error; the cause is logged, not shown.',
  503: 'The database is not reachable, the service is overloaded or shutting down; retry after Retry-After seconds.',
};

/** Declares the given error statuses of a route, all in the problem-details shape. */
export function problemResponses(...statuses: number[]): Record<number, TSchema> {
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      {
        description: ERROR_MEANINGS[status] ?? STATUS_CODES[status] ?? 'Error',
        content: { [PROBLEM_CONTENT_TYPE]: { schema: ProblemSchema } },
      } as unknown as TSchema,
    ]),
  );
}

/** A JSON success response with a description and response headers, for the OpenAPI document. */
export function jsonResponse(schema: TSchema, description: string, headers: Record<string, string> = {}): TSchema {
  return {
    description,
    headers: Object.fromEntries(
      Object.entries(headers).map(([name, text]) => [name, { type: 'string', description: text }]),
    ),
    content: { 'application/json': { schema } },
  } as unknown as TSchema;
}
