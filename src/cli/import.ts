import { createReadStream, statSync } from 'node:fs';
import type { Readable } from 'node:stream';
import type { Database } from '../store/database.ts';
import { StoreAtEndError, type UserInput } from '../store/store.ts';
import { checkRecord } from './record-check.ts';
import { LineTooLong } from './lines.ts';
import { CommandFailed, openOutput, say, UsageError } from './output.ts';
import { holdSignals, releaseSignals } from './signals.ts';
import { Progress } from './progress.ts';
import {
  csvRows,
  FileFault,
  type Format,
  formatOfName,
  FORMATS,
  jsonRows,
  ndjsonRows,
  RejectsWriter,
  type Row,
  utf8Text,
} from './readers.ts';

/** Records sent to the database at a time. */
const BATCH = 5000;

export interface ImportOptions {
  file: string;
  format: string | undefined;
  skipInvalid: boolean;
  rejects: string | undefined;
  maxErrors: number;
  quiet: boolean;
}

/** The format asked for, or the one the file's name says. */
export function chooseFormat(given: string | undefined, file: string | undefined, fallback?: Format): Format {
  if (given !== undefined) {
    if (!(FORMATS as readonly string[]).includes(given)) {
      throw new UsageError(`--format must be one of ${FORMATS.join(', ')}, got ${JSON.stringify(given)}`);
    }
    return given as Format;
  }
  const named = file === undefined || file === '-' ? undefined : formatOfName(file);
  if (named !== undefined) return named;
  if (fallback !== undefined) return fallback;
  throw new UsageError(
    `cannot tell the format of ${file === '-' || file === undefined ? 'standard input' : file}; name it with --format ${FORMATS.join('|')}`,
  );
}

/** Counts the bytes that pass, for the progress bar. */
async function* counted(input: Readable, seen: { bytes: number }): AsyncGenerator<Buffer> {
  for await (const chunk of input as AsyncIterable<Buffer>) {
    seen.bytes += chunk.length;
    yield chunk;
  }
}

/** Whether two paths name one file (through links, or spelled differently). */
function sameFile(a: string, b: string): boolean {
  try {
    const first = statSync(a);
    const second = statSync(b);
    return first.dev === second.dev && first.ino === second.ino;
  } catch {
    return false;
  }
}

/** `user-records import FILE|-`: exit code 0 stored, 1 nothing stored (or failed). */
export async function importCommand(database: Database, options: ImportOptions): Promise<number> {
  const format = chooseFormat(options.format, options.file);
  const stdin = options.file === '-';
  let size: number | undefined;
  if (!stdin) {
    try {
      const stat = statSync(options.file);
      if (!stat.isFile()) throw new CommandFailed(`${options.file} is not a file`);
      size = stat.size;
    } catch (error) {
      if (error instanceof CommandFailed) throw error;
      throw new CommandFailed(`cannot read ${options.file}: ${(error as Error).message}`);
    }
  }
  const input = stdin ? process.stdin : createReadStream(options.file, { highWaterMark: 64 * 1024 });
  const seen = { bytes: 0 };
  const text = utf8Text(counted(input, seen));
  const rejectsPath = options.rejects ?? (stdin ? `rejects.${format}` : `${options.file}.rejects.${format}`);
  if (options.skipInvalid && !stdin && sameFile(rejectsPath, options.file)) {
    throw new UsageError(
      `--rejects ${rejectsPath} is the file being imported; name another file for the rejected rows`,
    );
  }
  const rejectsOutput = options.skipInvalid ? openOutput(rejectsPath) : undefined;
  const rejects = rejectsOutput === undefined ? undefined : new RejectsWriter(rejectsOutput.stream, format);
  const batches: AsyncGenerator<Row[]> =
    format === 'csv'
      ? csvRows(text, (header) => rejects?.header(header))
      : format === 'json'
        ? jsonRows(text)
        : ndjsonRows(text);
  const name = stdin ? 'standard input' : options.file;

  const progress = new Progress('import', { quiet: options.quiet });
  progress.phase('opening the database');
  let bulk;
  try {
    bulk = await database.openBulk();
  } catch (error) {
    progress.stop();
    rejectsOutput?.discard();
    throw error;
  }
  let importer;
  try {
    importer = await bulk.importer();
  } catch (error) {
    await bulk.close();
    progress.stop();
    rejectsOutput?.discard();
    throw error;
  }
  let batch: UserInput[] = [];
  // One batch may be on its way to the database while the next is read (PostgreSQL works meanwhile).
  let sending: Promise<void> = Promise.resolve();
  const send = async (rows: UserInput[]) => {
    await sending;
    sending = importer.add(rows);
    sending.catch(() => undefined);
  };
  let good = 0;
  let bad = 0;
  let listed = 0;
  let committed = false;
  try {
    // Each row is checked, and each batch stored, as the file is read: one phase, counted in bytes read.
    progress.phase('reading', { total: size, count: true });
    for await (const rows of batches) {
      for (const row of rows) {
        const checked = row.fields === undefined ? undefined : checkRecord(row.fields);
        if (checked?.ok === true) {
          good++;
          if (bad === 0 || options.skipInvalid) {
            batch.push(checked.input);
            if (batch.length >= BATCH) {
              await send(batch);
              batch = [];
            }
          }
        } else {
          bad++;
          rejects?.write(row);
          if (listed < options.maxErrors) {
            listed++;
            const faults =
              checked?.ok === false ? checked.errors : [{ parameter: 'row', detail: row.fault ?? 'is not a record' }];
            for (const fault of faults) progress.note(`${name} line ${row.line}: ${fault.parameter} ${fault.detail}`);
          }
        }
      }
      progress.update(good + bad, seen.bytes);
    }
    progress.update(good + bad, seen.bytes);
    progress.phase('storing');
    if (bad > listed)
      progress.note(`... and ${bad - listed} more bad rows (only the first ${listed} are listed; see --max-errors)`);
    await sending;
    if (bad > 0 && !options.skipInvalid) {
      progress.stop();
      await importer.abort();
      rejectsOutput?.discard();
      say(`${name}: ${bad} of ${good + bad} rows are bad; nothing was stored (fix them, or pass --skip-invalid)`);
      return 1;
    }
    await importer.add(batch);
    // The rejected rows are in place before the commit: a rejects file that cannot be written
    // stores nothing, rather than failing after the good rows are stored.
    if (bad > 0) {
      rejects?.close();
      await rejectsOutput?.finish();
    } else rejectsOutput?.discard();
    holdSignals();
    let ids: { firstId?: number; lastId?: number };
    try {
      ids = await importer.commit((step) => progress.phase(step));
      progress.finish();
    } catch (error) {
      if (bad > 0) rejectsOutput?.withdraw();
      await releaseSignals(false);
      throw error;
    }
    committed = true;
    const late = await releaseSignals(true);
    const range = ids.firstId === undefined ? '' : ` (ids ${ids.firstId} to ${ids.lastId})`;
    const skipped = bad > 0 ? `; ${bad} bad rows skipped, written to ${rejectsPath}` : '';
    process.stdout.write(`imported ${good} records${range}${skipped}\n`);
    if (late !== undefined) say(late);
    return 0;
  } catch (error) {
    progress.stop();
    await sending.catch(() => undefined);
    if (!committed) await importer.abort().catch(() => undefined);
    rejectsOutput?.discard();
    if (error instanceof FileFault || error instanceof LineTooLong)
      throw new CommandFailed(`${name} line ${error.line}: ${error.message}; nothing was stored`);
    if (error instanceof StoreAtEndError) throw new CommandFailed(`${name}: ${error.message}; nothing was stored`);
    throw error;
  } finally {
    await bulk.close();
  }
}
