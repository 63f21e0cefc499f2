import type { Database } from '../store/database.ts';
import { Progress } from './progress.ts';

/** `user-records migrate`: the schema brought up to date (opening does it), and its version. */
export async function migrateCommand(database: Database, options: { quiet: boolean }): Promise<number> {
  const progress = new Progress('migrate', { quiet: options.quiet });
  progress.phase('bringing the schema up to date');
  const bulk = await database.openBulk().catch((error: unknown) => {
    progress.stop();
    throw error;
  });
  try {
    const version = await bulk.schemaVersion();
    progress.finish();
    process.stdout.write(`schema version ${version} (${database.kind}): up to date\n`);
    return 0;
  } catch (error) {
    progress.stop();
    throw error;
  } finally {
    await bulk.close();
  }
}

/** `user-records check`: integrity and counts; exit code 1 when anything is wrong. */
export async function checkCommand(database: Database, options: { quiet: boolean }): Promise<number> {
  const progress = new Progress('check', { quiet: options.quiet });
  progress.phase('opening the database');
  const bulk = await database.openBulk({ existing: true }).catch((error: unknown) => {
    progress.stop();
    throw error;
  });
  try {
    progress.phase('checking');
    const { problems, records, keys } = await bulk.check();
    const version = await bulk.schemaVersion();
    progress.finish();
    for (const problem of problems) process.stderr.write(`problem: ${problem}\n`);
    const verdict = problems.length === 0 ? 'ok' : `${problems.length} problem${problems.length === 1 ? '' : 's'}`;
    process.stdout.write(
      `${verdict}: ${records} records, ${keys} idempotency keys (${database.kind}, schema version ${version})\n`,
    );
    return problems.length === 0 ? 0 : 1;
  } catch (error) {
    progress.stop();
    throw error;
  } finally {
    await bulk.close();
  }
}
