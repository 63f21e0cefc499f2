import { createHash } from 'node:crypto';
import type { Database } from '../store/database.ts';
import { FORMAT, FORMAT_VERSION, type Header, keyLine, recordLine } from './backup-format.ts';
import { openOutput, put } from './output.ts';
import { Progress } from './progress.ts';

/** `user-records backup FILE`: a consistent snapshot while the service runs. */
export async function backupCommand(database: Database, options: { file: string; quiet: boolean }): Promise<number> {
  // The output first: one that cannot be written is said before the database is opened.
  const output = openOutput(options.file);
  const progress = new Progress('backup', { quiet: options.quiet });
  progress.phase('opening the database');
  const bulk = await database.openBulk({ existing: true }).catch((error: unknown) => {
    progress.stop();
    output.discard();
    throw error;
  });
  const hash = createHash('sha256');
  const write = (text: string) => {
    hash.update(text);
    return put(output.stream, text);
  };
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
    progress.phase('counting');
    const total = await snapshot.count();
    progress.phase('writing records', { total });
    let records = 0;
    for await (const page of snapshot.records()) {
      let text = '';
      for (const r of page) {
        text += `${JSON.stringify(recordLine(r))}\n`;
      }
      records += page.length;
      await write(text);
      progress.update(records);
    }
    let keys = 0;
    progress.phase('writing idempotency keys', { count: true });
    for await (const page of snapshot.keys()) {
      let text = '';
      for (const k of page) text += `${JSON.stringify(keyLine(k))}\n`;
      keys += page.length;
      await write(text);
      progress.update(keys);
    }
    await snapshot.end();
    await put(output.stream, `${JSON.stringify({ end: { records, keys, sha256: hash.digest('hex') } })}\n`);
    progress.phase('syncing to disk');
    await output.finish();
    progress.finish();
    process.stdout.write(
      `backed up ${records} records and ${keys} idempotency keys at change version ${snapshot.version} to ${options.file}\n`,
    );
    return 0;
  } catch (error) {
    progress.stop();
    output.discard();
    throw error;
  } finally {
    await bulk.close();
  }
}
