import { Compile } from 'typebox/compile';
import { HttpError } from '../http/problem.ts';
import { fieldErrors } from '../http/validation.ts';
import type { Snapshot } from '../store/bulk.ts';
import type { Database } from '../store/database.ts';
import { type ListFilter, type ListOrder, narrows, sortValue, type User } from '../store/store.ts';
import { HEAD, PAGE_SIZE, TAIL } from '../users/listing.ts';
import { recordJson, selectedFields } from '../record/json.ts';
import { parseListing } from '../users/query.ts';
import { ListQuery, RULES } from '../users/schemas.ts';
import { csvLine, csvValues, looksLikeFormula } from '../record/csv.ts';
import { chooseFormat } from './import.ts';
import { openOutput, put, UsageError } from './output.ts';
import { Progress } from './progress.ts';

const checkQuery = Compile(ListQuery);

/** The filters of GET /users as given (`--city Paris` is `city=Paris`), checked by the API's own rules. */
function listingOf(query: Record<string, string>) {
  if (!checkQuery.Check(query)) {
    const faults = fieldErrors(checkQuery.Errors(query), query, RULES, Object.keys(ListQuery.properties));
    throw new UsageError(faults.map((fault) => `--${fault.parameter} ${fault.detail}`).join('; '));
  }
  try {
    return parseListing(query as ListQuery);
  } catch (error) {
    const faults = error instanceof HttpError ? (error.errors ?? []) : [];
    if (faults.length === 0) throw error;
    throw new UsageError(faults.map((fault) => `--${fault.parameter} ${fault.detail}`).join('; '));
  }
}

/**
 * Every record the filter picks, a page at a time, inside the snapshot (keyset, as the service's
 * listing). With no filter and no order, the whole table in id order: read as a backup reads it,
 * which reads only the columns a record shows (a third less work than the listing's query).
 */
async function* pages(snapshot: Snapshot, filter: ListFilter, order: ListOrder | undefined): AsyncGenerator<User[]> {
  if (order === undefined && !narrows(filter)) {
    for await (const page of snapshot.records()) {
      yield page.map((r) => ({ ...r, createdAt: new Date(r.createdAt), updatedAt: new Date(r.updatedAt) }));
    }
    return;
  }
  let afterId = 0;
  let after = order?.after;
  for (;;) {
    const page =
      order === undefined
        ? await snapshot.list({ ...filter, afterId, limit: PAGE_SIZE })
        : await snapshot.list({ ...filter, limit: PAGE_SIZE }, { sort: order.sort, after });
    if (page.length > 0) yield page;
    if (page.length < PAGE_SIZE) return;
    const last = page.at(-1) as User;
    afterId = last.id;
    after = { values: order?.sort.map((key) => sortValue(last, key.field)) ?? [], id: last.id };
  }
}

/** `user-records export [FILE]`. */
export async function exportCommand(
  database: Database,
  options: {
    file: string | undefined;
    format: string | undefined;
    query: Record<string, string>;
    raw: boolean;
    quiet: boolean;
  },
): Promise<number> {
  const format = chooseFormat(options.format, options.file, 'json');
  if (options.raw && format !== 'csv') {
    throw new UsageError('--raw applies to --format csv only (json and ndjson always hold the values as stored)');
  }
  const csv = { raw: options.raw };
  const { filter, order } = listingOf(options.query);
  const fields = selectedFields(options.query.fields);
  // The output first: one that cannot be written is said before the database is opened.
  const output = openOutput(options.file);
  const progress = new Progress('export', { quiet: options.quiet });
  progress.phase('opening the database');
  const bulk = await database.openBulk({ existing: true }).catch((error: unknown) => {
    progress.stop();
    output.discard();
    throw error;
  });
  const out = output.stream;
  let rows = 0;
  let inert = 0;
  try {
    const snapshot = await bulk.snapshot();
    progress.phase('counting');
    const total = await snapshot.count();
    progress.phase('writing records', { total });
    if (format === 'json') await put(out, HEAD);
    if (format === 'csv') await put(out, csvLine(fields));
    for await (const page of pages(snapshot, filter, order)) {
      let text: string;
      if (format === 'csv') {
        text = '';
        for (const user of page) {
          const values = csvValues(user, fields);
          if (!options.raw) for (const value of values) if (looksLikeFormula(value)) inert++;
          text += csvLine(values, csv);
        }
      } else if (format === 'ndjson') {
        text = '';
        for (const user of page) text += `${recordJson(user, fields)}\n`;
      } else {
        text = rows === 0 ? '' : ',';
        for (let i = 0; i < page.length; i++) text += (i === 0 ? '' : ',') + recordJson(page[i] as User, fields);
      }
      rows += page.length;
      await put(out, text);
      progress.update(rows);
    }
    if (format === 'json') await put(out, TAIL);
    await snapshot.end();
    progress.phase('syncing to disk');
    await output.finish();
    progress.finish();
    if (options.file !== undefined && options.file !== '-') {
      process.stderr.write(`exported ${rows} records to ${options.file} (change version ${snapshot.version})\n`);
    }
    if (inert > 0) {
      process.stderr.write(
        `${inert} values that start like a spreadsheet formula (= + - @) were written with a leading ' so that a spreadsheet shows them as text; --raw writes them as stored\n`,
      );
    }
    return 0;
  } catch (error) {
    progress.stop();
    output.discard();
    throw error;
  } finally {
    await bulk.close();
  }
}
