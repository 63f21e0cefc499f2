import type { FastifyRequest } from 'fastify';
import { batchTooLarge, bodySize } from '../http/body-parsers.ts';
import { BODY_LIMIT, kib, MAX_BATCH } from '../http/limits.ts';
import type { FieldError } from '../http/problem.ts';
import { HttpError } from '../http/problem.ts';
import { compileChecker, invalidInput } from '../http/validation.ts';
import { fieldList, RECORD_FIELDS } from '../record/fields.ts';
import { normalizeValue, valuesOf } from '../record/rules.ts';
import type { UserInput } from '../store/store.ts';
import { FieldsQuery, RecordInput, RULES } from './schemas.ts';

/**
 * A batch create: `POST /users` with a JSON array of records, or NDJSON (one record per line, which
 * the body parser also hands over as an array). Each record is checked by the rule of a single
 * create; a fault is named by its place, as a JSON Pointer into the array (`/3/age`).
 */

/** The bodies of the batch requests in flight, held from preValidation to the handler. */
const batches = new WeakMap<FastifyRequest, unknown[]>();

/** Takes an array body as a batch: the query string may then carry only `fields`. */
export function holdBatch(request: FastifyRequest, records: unknown[]): void {
  batches.set(request, records);
  request.body = undefined;
}

/** The batch this request carries, if it is one. */
export function batchOf(request: FastifyRequest): unknown[] | undefined {
  return batches.get(request);
}

const checkQuery = compileChecker(FieldsQuery, RULES);
const checkRecord = compileChecker(RecordInput, RULES, 'is not a field of a record');
const NOT_A_RECORD = `must be an object of ${fieldList(RECORD_FIELDS, 'and')}`;

/** A name as a JSON Pointer token (RFC 6901): `~` and `/` escaped. */
const pointerToken = (name: string) => name.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * The batch's records as the store takes them, or a 400 naming every fault (the query string's
 * too, and a bad Idempotency-Key's), or a 413 past MAX_BATCH records.
 */
export function checkedBatch(request: FastifyRequest, records: readonly unknown[]): UserInput[] {
  if (records.length > MAX_BATCH) throw new HttpError('payload-too-large', batchTooLarge(String(records.length)));
  if (records.length === 0) {
    throw new HttpError('invalid-input', `The body holds no records; send 1 to ${MAX_BATCH} of them.`);
  }
  // As for one record, BODY_LIMIT each: a batch of one is not a way round it.
  if (bodySize(request) > BODY_LIMIT * records.length) {
    throw new HttpError(
      'payload-too-large',
      `The body is larger than the service accepts for ${records.length} record${records.length === 1 ? '' : 's'} (${kib(BODY_LIMIT)} each).`,
    );
  }
  const faults: FieldError[] = checkQuery(request.query);
  const inputs: UserInput[] = [];
  records.forEach((record, i) => {
    if (typeof record !== 'object' || record === null || Array.isArray(record)) {
      faults.push({ parameter: `/${i}`, detail: NOT_A_RECORD });
      return;
    }
    // The copy keeps the faults the parser found (its repeated keys), held under a symbol key.
    const given: Record<string, unknown> = { ...record };
    for (const field of RECORD_FIELDS) {
      if (given[field] !== undefined) given[field] = normalizeValue(field, given[field]);
    }
    const own = checkRecord(given);
    for (const fault of own) faults.push({ parameter: `/${i}/${pointerToken(fault.parameter)}`, detail: fault.detail });
    if (own.length === 0) inputs.push(valuesOf(given as Record<(typeof RECORD_FIELDS)[number], string>));
  });
  if (faults.length > 0) throw invalidInput(faults);
  return inputs;
}
