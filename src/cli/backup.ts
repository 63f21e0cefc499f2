import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Config } from '../config/load.ts';
import { openBulkStore, type StoredKey, type StoredRecord } from '../store/bulk.ts';
import { IDEMPOTENCY_KEY_PATTERN } from '../users/idempotency.ts';
import { checkRecord } from '../users/record-check.ts';
import { CommandFailed, openOutput, put, say } from './output.ts';
import { Progress } from './progress.ts';
import { holdSignals, releaseSignals } from './signals.ts';

/**
 * The backup format, the same for both stores: lines of JSON. First a header; then one line per
 * record, `["r",id,name,age,city,createdAt,updatedAt,version]` (times in ms since the epoch), and one
 * per remembered Idempotency-Key, `["k",key,fingerprint,userId,createdAt]`; last,
 * `{"end":{"records":N,"keys":M,"sha256":"..."}}`, the SHA-256 of every byte before that line.
 */
const FORMAT = 'user-records-backup';
const FORMAT_VERSION = 1;
const BATCH = 1000;

interface Header {
  format: string;
  formatVersion: number;
  changeVersion: number;
  lastId: number;
  takenAt: string;
}

/** `user-records backup FILE`: a consistent snapshot while the service runs. */
export async function backupCommand(config: Config, options: { file: string; quiet: boolean }): Promise<number> {
  // The output first: one that cannot be written is said before the database is opened.
  const output = openOutput(options.file);
  const bulk = await openBulkStore(config).catch((error: unknown) => {
    output.discard();
    throw error;
  });
  const hash = createHash('sha256');
  const write = (text: string) => {
    hash.update(text);
    return put(output.stream, text);
  };
  let progress: Progress | undefined;
  try {
    const snapshot = await bulk.snapshot();
    const header: Header = {
      format: FORMAT,
      formatVersion: FORMAT_VERSION,
      changeVersion: snapshot.version,
      lastId: snapshot.lastId,
      takenAt: new Date().toISOString(),
    };
    await write(`${JSON.stringify(header)}\n`);
    progress = new Progress('backup', { total: await snapshot.count(), quiet: options.quiet });
    let records = 0;
    for await (const page of snapshot.records()) {
      let text = '';
      for (const r of page) {
        text += `${JSON.stringify(['r', r.id, r.name, r.age, r.city, r.createdAt, r.updatedAt, r.version])}\n`;
      }
      records += page.length;
      await write(text);
      progress.update(records);
    }
    let keys = 0;
    for await (const page of snapshot.keys()) {
      let text = '';
      for (const k of page) text += `${JSON.stringify(['k', k.key, k.fingerprint, k.userId, k.createdAt])}\n`;
      keys += page.length;
      await write(text);
    }
    await snapshot.end();
    await put(output.stream, `${JSON.stringify({ end: { records, keys, sha256: hash.digest('hex') } })}\n`);
    await output.finish();
    progress.stop();
    process.stdout.write(
      `backed up ${records} records and ${keys} idempotency keys at change version ${snapshot.version} to ${options.file}\n`,
    );
    return 0;
  } catch (error) {
    progress?.stop();
    output.discard();
    throw error;
  } finally {
    await bulk.close();
  }
}

type Line =
  { kind: 'header'; header: Header } | { kind: 'record'; record: StoredRecord } | { kind: 'key'; key: StoredKey };

const isInt = (value: unknown): value is number => Number.isSafeInteger(value);
/** The largest id the service reads (15 digits): a backup with a larger one was not made by it. */
const MAX_ID = 999_999_999_999_999;
const isId = (value: unknown): value is number => isInt(value) && value >= 1 && value <= MAX_ID;
const isCount = (value: unknown): value is number => isInt(value) && value >= 0;
/** The last moment either store can hold (9999-12-31, in ms since the epoch). */
const LAST_TIME = 253_402_300_799_999;
const isTime = (value: unknown): value is number => isCount(value) && value <= LAST_TIME;
/** A record's version is a 32-bit integer in PostgreSQL. */
const MAX_RECORD_VERSION = 2_147_483_647;
/** An Idempotency-Key as the service takes one, and a fingerprint as it makes one (SHA-256, hex). */
const KEY = new RegExp(IDEMPOTENCY_KEY_PATTERN);
const FINGERPRINT = /^[0-9a-f]{64}$/;

/** Why a record of a backup could not have been stored by the service, or undefined. */
function recordFault(record: StoredRecord): string | undefined {
  if (!isId(record.id)) return `its id ${record.id} is not from 1 to ${MAX_ID}`;
  if (!isInt(record.version) || record.version < 1 || record.version > MAX_RECORD_VERSION) {
    return `its version ${record.version} is not a whole number from 1 to ${MAX_RECORD_VERSION}`;
  }
  if (!isTime(record.createdAt) || !isTime(record.updatedAt) || record.updatedAt < record.createdAt) {
    return 'its times are not a creation time and a later (or equal) update time, before the year 10000';
  }
  const checked = checkRecord({ name: record.name, age: record.age, city: record.city });
  if (!checked.ok) return checked.errors.map((error) => `${error.parameter} ${error.detail}`).join('; ');
  const { input } = checked;
  if (input.name !== record.name || input.city !== record.city || input.age !== record.age) {
    return 'its fields are not as the service stores them (white space around a name or city)';
  }
  return undefined;
}

/** The lines of a backup, each checked for its shape; the last one (the checksum) is given apart. */
async function* backupLines(
  file: string,
  onEnd: (end: unknown, hash: string, line: number) => void,
): AsyncGenerator<Line> {
  const hash = createHash('sha256');
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  let number = 0;
  let pending: string | undefined;
  const parse = (text: string, at: number): Line => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new CommandFailed(`${file} line ${at} is not JSON: this is not a backup, or it is damaged`);
    }
    if (at === 1) {
      const header = value as Header;
      if (header?.format !== FORMAT) throw new CommandFailed(`${file} is not a backup of this service`);
      if (header.formatVersion !== FORMAT_VERSION) {
        throw new CommandFailed(
          `${file} is a backup of format ${header.formatVersion}; this version reads ${FORMAT_VERSION}`,
        );
      }
      if (
        !isCount(header.changeVersion) ||
        header.changeVersion > MAX_ID ||
        !isCount(header.lastId) ||
        header.lastId > MAX_ID
      ) {
        throw new CommandFailed(`${file} line 1: its change version or last id is not a whole number in range`);
      }
      return { kind: 'header', header };
    }
    const row = value as unknown[];
    if (Array.isArray(row) && row[0] === 'r' && row.length === 8 && [1, 3, 5, 6, 7].every((i) => isInt(row[i]))) {
      const [, id, name, age, city, createdAt, updatedAt, version] = row as [
        string,
        number,
        string,
        number,
        string,
        number,
        number,
        number,
      ];
      const record = { id, name, age, city, createdAt, updatedAt, version };
      const fault = recordFault(record);
      if (fault !== undefined) throw new CommandFailed(`${file} line ${at}: record ${id}: ${fault}`);
      return { kind: 'record', record };
    }
    if (
      Array.isArray(row) &&
      row[0] === 'k' &&
      row.length === 5 &&
      typeof row[1] === 'string' &&
      KEY.test(row[1]) &&
      typeof row[2] === 'string' &&
      FINGERPRINT.test(row[2]) &&
      isId(row[3]) &&
      isTime(row[4])
    ) {
      const [, key, fingerprint, userId, createdAt] = row as [string, string, string, number, number];
      return { kind: 'key', key: { key, fingerprint, userId, createdAt } };
    }
    throw new CommandFailed(`${file} line ${at} is not a record or key line of a backup`);
  };
  for await (const text of lines) {
    number++;
    if (pending !== undefined) {
      hash.update(`${pending}\n`);
      yield parse(pending, number - 1);
    }
    pending = text;
  }
  let end: unknown;
  try {
    end = JSON.parse(pending ?? '');
  } catch {
    end = undefined;
  }
  onEnd(end, hash.digest('hex'), number);
}

/** Reads the whole backup and checks its checksum and counts; nothing is written. */
async function verify(file: string): Promise<Header> {
  let header: Header | undefined;
  let records = 0;
  let keys = 0;
  let end: { records?: number; keys?: number; sha256?: string } | undefined;
  let digest = '';
  let lastId = 0;
  const seenKeys = new Set<string>();
  for await (const line of backupLines(file, (last, hash) => {
    end = (last as { end?: typeof end } | undefined)?.end;
    digest = hash;
  })) {
    if (line.kind === 'header') header = line.header;
    else if (line.kind === 'record') {
      records++;
      const { id } = line.record;
      if (header !== undefined && id > header.lastId) {
        throw new CommandFailed(`${file}: record ${id} is beyond the last id ${header.lastId} it gives`);
      }
      // A backup lists its records in id order, each once.
      if (id <= lastId) throw new CommandFailed(`${file}: record ${id} comes after record ${lastId}`);
      lastId = id;
    } else {
      keys++;
      if (seenKeys.has(line.key.key))
        throw new CommandFailed(`${file}: the idempotency key ${JSON.stringify(line.key.key)} is there twice`);
      seenKeys.add(line.key.key);
    }
  }
  if (header === undefined || end === undefined)
    throw new CommandFailed(`${file} is cut short: its last line is not the checksum`);
  if (end.sha256 !== digest) throw new CommandFailed(`${file} is damaged: its checksum does not match its content`);
  if (end.records !== records || end.keys !== keys)
    throw new CommandFailed(`${file} is damaged: its counts do not match its content`);
  return header;
}

/** `user-records restore FILE`: the checksum first, then the whole backup in one transaction. */
export async function restoreCommand(
  config: Config,
  options: { file: string; replace: boolean; quiet: boolean },
): Promise<number> {
  let header: Header;
  try {
    header = await verify(options.file);
  } catch (error) {
    if (error instanceof CommandFailed) throw error;
    throw new CommandFailed(`cannot read ${options.file}: ${(error as Error).message}`);
  }
  const bulk = await openBulkStore(config);
  try {
    const restorer = await bulk.restorer({ replace: options.replace });
    const progress = new Progress('restore', { quiet: options.quiet });
    let records: StoredRecord[] = [];
    let keys: StoredKey[] = [];
    let count = 0;
    try {
      for await (const line of backupLines(options.file, () => undefined)) {
        if (line.kind === 'record') {
          records.push(line.record);
          if (records.length >= BATCH) {
            await restorer.addRecords(records);
            count += records.length;
            records = [];
            progress.update(count);
          }
        } else if (line.kind === 'key') {
          keys.push(line.key);
          if (keys.length >= BATCH) {
            await restorer.addKeys(keys);
            keys = [];
          }
        }
      }
      await restorer.addRecords(records);
      count += records.length;
      await restorer.addKeys(keys);
      holdSignals();
      await restorer.commit({ version: header.changeVersion, lastId: header.lastId });
      progress.stop();
    } catch (error) {
      progress.stop();
      await restorer.abort().catch(() => undefined);
      releaseSignals(false);
      throw error;
    }
    const late = releaseSignals(true);
    process.stdout.write(`restored ${count} records at change version ${header.changeVersion} from ${options.file}\n`);
    if (late !== undefined) say(late);
    return 0;
  } finally {
    await bulk.close();
  }
}
