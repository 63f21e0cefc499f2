import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { StoredKey, StoredRecord } from '../store/bulk.ts';
import type { Database } from '../store/database.ts';
import { type Header, LineFault, readBodyLine, readEnd, readHeader } from './backup-format.ts';
import { type ByteLine, byteLines, LineTooLong } from './lines.ts';
import { CommandFailed, say } from './output.ts';
import { Progress } from './progress.ts';
import { holdSignals, releaseSignals } from './signals.ts';

/** Records (and keys) sent to the database at a time. */
const BATCH = 1000;

/** The bytes of the file, or of standard input; a fault reading them names the source. */
async function* source(file: string, name: string): AsyncGenerator<Buffer> {
  try {
    yield* file === '-' ? (process.stdin as AsyncIterable<Buffer>) : createReadStream(file);
  } catch (error) {
    throw new CommandFailed(`cannot read ${name}: ${(error as Error).message}`);
  }
}

/**
 * A backup read once, from its first byte to its last: each line is checked as it comes and added
 * to the SHA-256, and the records and keys are handed on in batches. The end line (the last) is
 * checked against what came before it; without it, or with other counts or another checksum, the
 * reader throws, so nothing of a file cut short or changed is ever committed.
 */
class BackupReader {
  readonly #name: string;
  readonly #lines: AsyncIterator<ByteLine>;
  readonly #hash = createHash('sha256');
  readonly #decoder = new TextDecoder('utf-8', { fatal: true });
  #header: Header | undefined;

  constructor(file: string, name: string) {
    this.#name = name;
    this.#lines = byteLines(source(file, name));
  }

  #fault(line: number, message: string): CommandFailed {
    return new CommandFailed(`${this.#name} line ${line}: ${message}; nothing was restored`);
  }

  /** The next line, or undefined at the end of the bytes. */
  async #next(): Promise<ByteLine | undefined> {
    try {
      const next = await this.#lines.next();
      return next.done === true ? undefined : next.value;
    } catch (error) {
      if (error instanceof LineTooLong) throw this.#fault(error.line, error.message);
      throw error;
    }
  }

  #json(line: ByteLine): unknown {
    let text: string;
    try {
      text = this.#decoder.decode(line.bytes);
    } catch {
      throw this.#fault(line.number, 'is not valid UTF-8');
    }
    try {
      return JSON.parse(text);
    } catch {
      throw this.#fault(
        line.number,
        line.ended ? 'is not JSON: this is not a backup, or it is damaged' : 'is torn: the file is cut short',
      );
    }
  }

  #take(line: ByteLine): void {
    this.#hash.update(line.bytes);
    this.#hash.update('\n');
  }

  /** Stops reading (a fault, or a refusal) and lets go of the file or standard input. */
  async close(): Promise<void> {
    await this.#lines.return?.(undefined);
  }

  /** Line 1, before anything is written: a file that is not a backup is refused without opening the database. */
  async header(): Promise<Header> {
    const first = await this.#next();
    if (first === undefined) throw new CommandFailed(`${this.#name} is empty: it is not a backup`);
    try {
      this.#header = readHeader(this.#json(first));
    } catch (error) {
      if (error instanceof LineFault) throw this.#fault(error.line, error.message);
      throw error;
    }
    this.#take(first);
    return this.#header;
  }

  /** The records and keys after the header, in batches; returns once the end line has matched them all. */
  async *batches(checking: () => void): AsyncGenerator<{ records: StoredRecord[]; keys: StoredKey[] }> {
    const header = this.#header as Header;
    let records: StoredRecord[] = [];
    let keys: StoredKey[] = [];
    let recordCount = 0;
    const seenKeys = new Set<string>();
    let lastId = 0;
    // A line is known not to be the end line only once another follows it.
    let pending = await this.#next();
    for (let next = pending && (await this.#next()); next !== undefined; next = await this.#next()) {
      const line = pending as ByteLine;
      pending = next;
      try {
        const read = readBodyLine(line.number, this.#json(line), header);
        if ('record' in read) {
          const { id } = read.record;
          // A backup lists its records in id order, each once.
          if (id <= lastId) throw new LineFault(line.number, `id ${id} comes after id ${lastId}`);
          lastId = id;
          records.push(read.record);
          recordCount++;
        } else {
          if (seenKeys.has(read.key.key)) {
            throw new LineFault(line.number, `key ${JSON.stringify(read.key.key)} is there twice`);
          }
          seenKeys.add(read.key.key);
          keys.push(read.key);
        }
      } catch (error) {
        if (error instanceof LineFault) throw this.#fault(error.line, error.message);
        throw error;
      }
      this.#take(line);
      if (records.length + keys.length >= BATCH) {
        yield { records, keys };
        records = [];
        keys = [];
      }
    }
    if (pending === undefined) throw new CommandFailed(`${this.#name} is cut short: it ends after its header`);
    checking();
    const value = this.#json(pending);
    let end;
    try {
      end = readEnd(pending.number, value);
    } catch (error) {
      if (error instanceof LineFault) throw this.#fault(error.line, error.message);
      throw error;
    }
    if (end === undefined) {
      throw this.#fault(pending.number, 'is not the end line (counts and checksum): the file is cut short');
    }
    if (end.sha256 !== this.#hash.digest('hex')) {
      throw new CommandFailed(
        `${this.#name} is damaged: its checksum does not match its content; nothing was restored`,
      );
    }
    if (end.records !== recordCount || end.keys !== seenKeys.size) {
      throw new CommandFailed(
        `${this.#name} is damaged: its end line counts ${end.records} records and ${end.keys} keys, it holds ${recordCount} and ${seenKeys.size}; nothing was restored`,
      );
    }
    yield { records, keys };
  }
}

/**
 * `user-records restore FILE|-`: the backup read once, into one transaction that commits only
 * after its end line's counts and checksum match what was read.
 */
export async function restoreCommand(
  database: Database,
  options: { file: string; replace: boolean; quiet: boolean },
): Promise<number> {
  const name = options.file === '-' ? 'standard input' : options.file;
  const reader = new BackupReader(options.file, name);
  try {
    return await restore(reader, name, database, options);
  } finally {
    await reader.close();
  }
}

async function restore(
  reader: BackupReader,
  name: string,
  database: Database,
  options: { replace: boolean; quiet: boolean },
): Promise<number> {
  const header = await reader.header();
  const progress = new Progress('restore', { quiet: options.quiet });
  progress.phase('opening the database');
  let bulk;
  try {
    bulk = await database.openBulk();
  } catch (error) {
    progress.stop();
    throw error;
  }
  try {
    if (options.replace) progress.phase('clearing the database');
    let restorer;
    try {
      restorer = await bulk.restorer({ replace: options.replace });
    } catch (error) {
      progress.stop();
      throw error;
    }
    let count = 0;
    try {
      // Each line is checked as it is read, and each batch stored.
      progress.phase('reading', { count: true });
      for await (const { records, keys } of reader.batches(() => progress.phase('checking the checksum'))) {
        await restorer.addRecords(records);
        await restorer.addKeys(keys);
        count += records.length;
        progress.update(count);
      }
      holdSignals();
      await restorer.commit({ version: header.changeVersion, lastId: header.lastId }, (step) => progress.phase(step));
      progress.finish();
    } catch (error) {
      progress.stop();
      await restorer.abort().catch(() => undefined);
      await releaseSignals(false);
      throw error;
    }
    const late = await releaseSignals(true);
    process.stdout.write(`restored ${count} records at change version ${header.changeVersion} from ${name}\n`);
    if (late !== undefined) say(late);
    return 0;
  } finally {
    await bulk.close();
  }
}
