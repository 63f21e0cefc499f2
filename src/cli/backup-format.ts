import { FIELDS, fieldList, INTEGER_FIELDS, RECORD_FIELDS, TEXT_FIELDS } from '../record/fields.ts';
import type { StoredKey, StoredRecord } from '../store/bulk.ts';
import { MAX_RECORD_VERSION } from '../store/store.ts';
import { IDEMPOTENCY_KEY_PATTERN, IDEMPOTENCY_KEY_RULE } from '../users/idempotency.ts';
import { checkRecord } from './record-check.ts';
import { MAX_ID } from '../store/store.ts';
import { MAX_BATCH } from '../http/limits.ts';

/**
 * The backup format, the same for both stores: lines of JSON. First a header; then one line per
 * record, `["r",id,name,age,city,createdAt,updatedAt,version]` (the record's own fields in the
 * definition's order, record/fields.ts; times in ms since the epoch), and one
 * per remembered Idempotency-Key, `["k",key,fingerprint,userId,createdAt]`, with the ids of every record
 * it created as a last element for the key of a batch create (`[..., createdAt, [userId, ...]]`); last,
 * `{"end":{"records":N,"keys":M,"sha256":"..."}}`, the SHA-256 of every byte before that line.
 */
export const FORMAT = 'user-records-backup';
export const FORMAT_VERSION = 1;

export interface Header {
  format: string;
  formatVersion: number;
  changeVersion: number;
  lastId: number;
  takenAt: string;
}

export interface End {
  records: number;
  keys: number;
  sha256: string;
}

/** The last moment either store can hold and the API can name (9999-12-31, in ms since the epoch). */
const LAST_TIME = 253_402_300_799_999;

interface Range {
  min: number;
  max: number;
  /** Why the range ends there, for the message. */
  note: string;
}

const IDS = 'the ids the API takes; the service refuses a create past it';
/**
 * The whole numbers each field may be: the very ends the service keeps (write-rules.ts), so that
 * whatever it holds, its backup restores, and whatever restores can be changed until a write
 * would pass an end, which the API refuses with /problems/range-exhausted.
 */
export const RANGES: Readonly<Record<'id' | 'lastId' | 'changeVersion' | 'version' | 'time', Range>> = {
  id: { min: 1, max: MAX_ID, note: IDS },
  lastId: { min: 0, max: MAX_ID, note: IDS },
  changeVersion: {
    min: 0,
    max: MAX_ID,
    note: 'the event ids the API takes; the service refuses a change past it',
  },
  version: {
    min: 1,
    max: MAX_RECORD_VERSION,
    note: "PostgreSQL's INTEGER; the service refuses to change a record at it",
  },
  time: { min: 0, max: LAST_TIME, note: 'ms since 1970-01-01, before the year 10000' },
};

/**
 * A remembered key may be this far ahead of the restoring machine's clock (clocks of two machines
 * differ), no further: a key from the future would not expire for as long as it is ahead.
 */
export const KEY_CLOCK_SKEW_MS = 24 * 60 * 60 * 1000;

/** A line that is not what a backup holds there: the message names the field and the reason. */
export class LineFault extends Error {
  readonly line: number;

  constructor(line: number, message: string) {
    super(message);
    this.line = line;
  }
}

const KEY = new RegExp(IDEMPOTENCY_KEY_PATTERN);
const TYPES = `${fieldList(TEXT_FIELDS, 'and')} must be text, ${fieldList(INTEGER_FIELDS, 'and')} a whole number`;
const HEX_256 = /^[0-9a-f]{64}$/;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function wholeNumber(line: number, field: string, value: unknown, range: Range): number {
  if (Number.isSafeInteger(value) && (value as number) >= range.min && (value as number) <= range.max) {
    return value as number;
  }
  throw new LineFault(
    line,
    `${field} ${JSON.stringify(value) ?? 'missing'} is not a whole number from ${range.min} to ${range.max} (${range.note})`,
  );
}

/** Refuses an object with other keys than `keys`, naming the first. */
function onlyKeys(line: number, value: object, keys: readonly string[], what: string): void {
  const other = Object.keys(value).find((key) => !keys.includes(key));
  if (other !== undefined) throw new LineFault(line, `${what} has a field ${JSON.stringify(other)} no backup has`);
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The header (line 1), every field checked. */
export function readHeader(value: unknown): Header {
  if (!isObject(value) || value.format !== FORMAT)
    throw new LineFault(1, 'is not the header of a backup of this service');
  if (value.formatVersion !== FORMAT_VERSION) {
    throw new LineFault(
      1,
      `formatVersion ${JSON.stringify(value.formatVersion)}: this version of the service reads backups of format ${FORMAT_VERSION}`,
    );
  }
  onlyKeys(1, value, ['format', 'formatVersion', 'changeVersion', 'lastId', 'takenAt'], 'the header');
  const changeVersion = wholeNumber(1, 'changeVersion', value.changeVersion, RANGES.changeVersion);
  const lastId = wholeNumber(1, 'lastId', value.lastId, RANGES.lastId);
  const { takenAt } = value;
  if (typeof takenAt !== 'string' || !ISO_TIME.test(takenAt) || Number.isNaN(Date.parse(takenAt))) {
    throw new LineFault(1, `takenAt ${JSON.stringify(takenAt) ?? 'missing'} is not a time as a backup writes it`);
  }
  return { format: FORMAT, formatVersion: FORMAT_VERSION, changeVersion, lastId, takenAt };
}

/** A record line's values after its "r": what a backup keeps of a record, in this order. */
const RECORD_LINE = ['id', ...RECORD_FIELDS, 'createdAt', 'updatedAt', 'version'] as const;
/** A key line's length: "k", key, fingerprint, userId, createdAt (and a batch's ids after them). */
const KEY_LINE = 5;

/**
 * A record or key line, every field checked against the service's ranges and the header's last id;
 * `now` (ms since the epoch) is the restoring machine's clock, which a key may not be ahead of by
 * more than KEY_CLOCK_SKEW_MS.
 */
export function readBodyLine(
  line: number,
  value: unknown,
  header: Header,
  now: number = Date.now(),
): { record: StoredRecord } | { key: StoredKey } {
  if (Array.isArray(value) && value[0] === 'r' && value.length === RECORD_LINE.length + 1) {
    const n = RECORD_FIELDS.length;
    const given = Object.fromEntries(RECORD_FIELDS.map((field, i) => [field, value[i + 2] as unknown]));
    const record = {
      id: wholeNumber(line, 'id', value[1], RANGES.id),
      ...given,
      createdAt: wholeNumber(line, 'createdAt', value[n + 2], RANGES.time),
      updatedAt: wholeNumber(line, 'updatedAt', value[n + 3], RANGES.time),
      version: wholeNumber(line, 'version', value[n + 4], RANGES.version),
    } as StoredRecord;
    if (record.updatedAt < record.createdAt) {
      throw new LineFault(line, `updatedAt ${record.updatedAt} is before createdAt ${record.createdAt}`);
    }
    if (record.id > header.lastId) {
      throw new LineFault(line, `id ${record.id} is beyond the header's lastId ${header.lastId}`);
    }
    const wrongType = RECORD_FIELDS.some((field) =>
      FIELDS[field].kind === 'text' ? typeof given[field] !== 'string' : !Number.isSafeInteger(given[field]),
    );
    if (wrongType) throw new LineFault(line, TYPES);
    const checked = checkRecord(given);
    if (!checked.ok) {
      throw new LineFault(line, checked.errors.map((error) => `${error.parameter} ${error.detail}`).join('; '));
    }
    const { input } = checked;
    if (RECORD_FIELDS.some((field) => input[field] !== given[field])) {
      throw new LineFault(
        line,
        `${fieldList(TEXT_FIELDS, 'or')} is not as the service stores it (white space around it)`,
      );
    }
    return { record };
  }
  if (Array.isArray(value) && value[0] === 'k' && (value.length === KEY_LINE || value.length === KEY_LINE + 1)) {
    const [, key, fingerprint, userId, createdAt, batch] = value as unknown[];
    if (typeof key !== 'string' || !KEY.test(key)) {
      throw new LineFault(line, `key ${JSON.stringify(key)} is not an Idempotency-Key: ${IDEMPOTENCY_KEY_RULE}`);
    }
    if (typeof fingerprint !== 'string' || !HEX_256.test(fingerprint)) {
      throw new LineFault(line, 'fingerprint is not a SHA-256 in lower-case hex');
    }
    const stored: StoredKey = {
      key,
      fingerprint,
      userId: wholeNumber(line, 'userId', userId, { ...RANGES.id, max: header.lastId, note: "the header's lastId" }),
      createdAt: wholeNumber(line, 'createdAt', createdAt, {
        min: RANGES.time.min,
        max: Math.min(RANGES.time.max, now + KEY_CLOCK_SKEW_MS),
        note: `a key is remembered for a day from its creation; up to ${KEY_CLOCK_SKEW_MS / 3_600_000} h ahead of this machine's clock is taken for a difference of clocks`,
      }),
    };
    if (batch !== undefined) stored.batch = batchOf(line, batch, stored.userId, header);
    return { key: stored };
  }
  throw new LineFault(line, 'is not a record line ["r",...] or a key line ["k",...] of a backup');
}

/** A key line's batch: the ids of the records a batch create stored, the first its userId, in order. */
function batchOf(line: number, batch: unknown, userId: number, header: Header): number[] {
  if (!Array.isArray(batch) || batch.length === 0 || batch.length > MAX_BATCH) {
    throw new LineFault(line, `a key's batch is an array of 1 to ${MAX_BATCH} record ids`);
  }
  const ids = batch.map((id) =>
    wholeNumber(line, 'a batch id', id, { ...RANGES.id, max: header.lastId, note: "the header's lastId" }),
  );
  if (ids[0] !== userId) throw new LineFault(line, `a key's batch starts with its userId ${userId}`);
  if (ids.some((id, i) => i > 0 && id <= (ids[i - 1] as number))) {
    throw new LineFault(line, "a key's batch ids rise, each once");
  }
  return ids;
}

/** A key as its backup line. */
export function keyLine(key: StoredKey): unknown[] {
  const line: unknown[] = ['k', key.key, key.fingerprint, key.userId, key.createdAt];
  if (key.batch !== undefined) line.push(key.batch);
  return line;
}

/** A record as its backup line. */
export function recordLine(record: StoredRecord): unknown[] {
  return ['r', ...RECORD_LINE.map((field) => record[field])];
}

/** The end line: the counts and the checksum of what came before it. */
export function readEnd(line: number, value: unknown): End | undefined {
  if (!isObject(value) || !isObject(value.end)) return undefined;
  onlyKeys(line, value, ['end'], 'the end line');
  const { end } = value;
  onlyKeys(line, end, ['records', 'keys', 'sha256'], 'the end line');
  const count = { min: 0, max: Number.MAX_SAFE_INTEGER, note: 'a count' };
  const records = wholeNumber(line, 'records', end.records, count);
  const keys = wholeNumber(line, 'keys', end.keys, count);
  if (typeof end.sha256 !== 'string' || !HEX_256.test(end.sha256)) {
    throw new LineFault(line, 'sha256 is not a SHA-256 in lower-case hex');
  }
  return { records, keys, sha256: end.sha256 };
}
