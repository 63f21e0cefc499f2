import type { Database } from '../store/database.ts';

/** `user-records migrate`: the schema brought up to date (opening does it), and its version. */
export async function migrateCommand(database: Database): Promise<number> {
  const bulk = await database.openBulk();
  try {
    process.stdout.write(`schema version ${await bulk.schemaVersion()} (${database.kind}): up to date\n`);
    return 0;
  } finally {
    await bulk.close();
  }
}

/** `user-records check`: integrity and counts; exit code 1 when anything is wrong. */
export async function checkCommand(database: Database): Promise<number> {
  const bulk = await database.openBulk({ existing: true });
  try {
    const { problems, records, keys } = await bulk.check();
    for (const problem of problems) process.stderr.write(`problem: ${problem}\n`);
    const verdict = problems.length === 0 ? 'ok' : `${problems.length} problems`;
    process.stdout.write(
      `${verdict}: ${records} records, ${keys} idempotency keys (${database.kind}, schema version ${await bulk.schemaVersion()})\n`,
    );
    return problems.length === 0 ? 0 : 1;
  } finally {
    await bulk.close();
  }
}
