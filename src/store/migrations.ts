import { StoreOpenError } from './store.ts';

/** A numbered schema change. Never edit one that has shipped; add the next number instead. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/**
 * The migrations still to apply, in order. Throws when the database was written by a newer
 * version of the service than this one, which must not touch it.
 */
export function pendingMigrations<M extends Migration>(all: readonly M[], applied: ReadonlySet<number>): M[] {
  const newest = Math.max(0, ...applied);
  const known = all.at(-1)?.version ?? 0;
  if (newest > known) {
    throw new StoreOpenError(
      `the database is at schema version ${newest}, newer than this service knows (${known}); upgrade the service`,
    );
  }
  return all.filter((migration) => !applied.has(migration.version));
}
