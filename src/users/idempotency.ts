import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from '../http/problem.ts';
import { addParamErrors } from '../http/query-string.ts';
import type { User, UserInput, UserStore } from '../store/store.ts';
import { type FieldName, RECORD_FIELDS } from '../record/fields.ts';

/** 1 to 255 printable ASCII characters: no spaces, so a repeated header (joined with ", ") fails. */
export const IDEMPOTENCY_KEY_PATTERN = '^[\\x21-\\x7E]{1,255}$';
export const IDEMPOTENCY_KEY_RULE = '1 to 255 printable ASCII characters, with no spaces';
const KEY = new RegExp(IDEMPOTENCY_KEY_PATTERN);

/**
 * preValidation for POST /users: a bad Idempotency-Key joins the query's faults, so it is reported
 * in the same 400 as every other bad parameter, under the header's own name.
 */
export function checkIdempotencyKey(request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  const key = request.headers['idempotency-key'];
  if (key !== undefined && !(typeof key === 'string' && KEY.test(key))) {
    addParamErrors(request.query as object, [
      { parameter: 'Idempotency-Key', detail: `must be ${IDEMPOTENCY_KEY_RULE}` },
    ]);
  }
  done();
}

/**
 * What makes two requests "the same": the stored input and the fields the answer shows, however
 * they were sent (query, JSON or form). Only this hash is kept, never the input itself.
 */
export function fingerprintOf(input: UserInput, fields: readonly FieldName[]): string {
  // The values in the definition's order, then the fields: the same hash for the same request, always.
  const canonical = JSON.stringify([...RECORD_FIELDS.map((field) => input[field]), fields.join(',')]);
  return createHash('sha256').update(canonical).digest('hex');
}

/** The same for a batch: every record's input in order, and the fields; never equal to a single create's. */
export function batchFingerprintOf(inputs: readonly UserInput[], fields: readonly FieldName[]): string {
  const canonical = JSON.stringify([
    'batch',
    inputs.map((input) => RECORD_FIELDS.map((field) => input[field])),
    fields.join(','),
  ]);
  return createHash('sha256').update(canonical).digest('hex');
}

/** Refuses a key whose remembered request differs, or whose records were deleted since (as a single create's). */
export function refusedKey(reason: 'key-reused' | 'record-deleted', batch = false): HttpError {
  if (reason === 'record-deleted') {
    return new HttpError(
      'idempotency-key-record-deleted',
      batch
        ? 'A request with this Idempotency-Key already created these records, and one of them has since been deleted; nothing was stored. Send a new key to create them again.'
        : 'A request with this Idempotency-Key already created a record, which has since been deleted; nothing was stored. Send a new key to create it again.',
    );
  }
  return new HttpError(
    'idempotency-key-reused',
    'This Idempotency-Key was already used with other input; nothing was stored. Send a new key for a new request.',
  );
}

/** Creates the record, or, for a remembered Idempotency-Key, answers as the first time (422 for other input). */
export async function createIdempotently(
  store: UserStore,
  input: UserInput,
  fields: readonly FieldName[],
  key: string | undefined,
): Promise<{ user: User; replayed: boolean }> {
  if (key === undefined) return { user: await store.create(input), replayed: false };
  const result = await store.createOnce(input, { key, fingerprint: fingerprintOf(input, fields) });
  if (result.ok) return result;
  throw refusedKey(result.reason);
}
