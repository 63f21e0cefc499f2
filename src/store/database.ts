import type { DatabaseConfig } from '../config/load.ts';
import type { BulkStore } from './bulk.ts';
import { postgresDatabase } from './postgres/database.ts';
import { sqliteDatabase } from './sqlite/database.ts';
import type { UserStore } from './store.ts';

/** What opening a database reads of the settings; the service's own (retention, reader threads) may be left out. */
export type DatabaseSettings = { database: DatabaseConfig } & Parameters<typeof sqliteDatabase>[1] &
  Parameters<typeof postgresDatabase>[1];

/**
 * The database DATABASE_URL names, as the service and the commands use it. Nothing is connected
 * until one of its sides is opened; each opens connections of its own and brings the schema up to
 * date first.
 */
export interface Database {
  /** As the commands print it (`migrate`, `check`). */
  readonly kind: DatabaseConfig['kind'];
  /**
   * The service's store. Opening reads no more of the database than its schema (a 1M-record file
   * opens as fast as an empty one): the whole-file check is `user-records check`'s.
   */
  openStore(): Promise<UserStore>;
  /**
   * What the operator's commands need beside it (bulk.ts). `existing`: for the commands that only
   * read (backup, export, check), an SQLite file that is missing or empty is refused rather than
   * made: a mistyped DATABASE_URL must not give an empty backup and exit 0.
   */
  openBulk(options?: { existing?: boolean }): Promise<BulkStore>;
}

/** The database `settings.database` names (DATABASE_URL); connects to nothing yet. */
export function openDatabase(settings: DatabaseSettings): Database {
  const { database } = settings;
  const sides =
    database.kind === 'sqlite' ? sqliteDatabase(database.path, settings) : postgresDatabase(database.url, settings);
  return { kind: database.kind, ...sides };
}
